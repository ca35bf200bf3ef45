"""Reads a pipert checkpoint (format: pipert/Checkpoint.h) and prints, per stage,
how many copies it holds and whether all copies' parameters and optimizer
state are identical byte for byte."""
import struct
import sys

data = open(sys.argv[1], "rb").read()
assert data[:8] == b"PIPECKPT"
at = 8
version, elem, steps = struct.unpack_from("<IIq", data, at)
at += 16
(n,) = struct.unpack_from("<I", data, at)
at += 4 + n
(copies,) = struct.unpack_from("<I", data, at)
at += 4
stages = {}
for _ in range(copies):
    stage, params = struct.unpack_from("<iI", data, at)
    at += 8
    blob = b""
    for _ in range(params):
        (n,) = struct.unpack_from("<I", data, at)
        name = data[at + 4 : at + 4 + n]
        at += 4 + n
        rows, cols, first, second = struct.unpack_from("<QQBB", data, at)
        at += 18
        size = rows * cols * elem * (1 + first + second)
        blob += name + data[at : at + size]
        at += size
    stages.setdefault(stage, []).append(blob)
assert at + 8 == len(data), "trailing bytes"
print("steps", steps)
for stage in sorted(stages):
    blobs = stages[stage]
    same = all(b == blobs[0] for b in blobs)
    print("stage %d: %d copies, %s" % (stage, len(blobs), "identical" if same else "DIFFERENT"))
