#!/usr/bin/env python3
"""Compares two checkpoints (runtime/include/pipert/Checkpoint.h) byte for byte
after their descriptions: the parameters and optimizer state of two runs of
different schedules (one with memory ops, one without) must be identical.

Layout: "PIPECKPT", u32 version, u32 element bytes, i64 steps, u32 length and
the description text (it names the schedule), then the state; the last eight
bytes are a checksum over everything before them (so it differs with the text).

usage: checkpoint_same_state.py A B   (exit 0: same header numbers and state)
"""
import struct
import sys


def split(path):
    data = open(path, "rb").read()
    head = data[:24]  # magic, version, element bytes, steps
    (length,) = struct.unpack_from("<I", data, 24)
    return head, data[28 + length:-8]


def main():
    (head_a, state_a), (head_b, state_b) = split(sys.argv[1]), split(sys.argv[2])
    if head_a != head_b:
        print(f"headers differ: {head_a!r} {head_b!r}")
        return 1
    if state_a != state_b:
        at = next(i for i, (x, y) in enumerate(zip(state_a, state_b)) if x != y) if len(state_a) == len(state_b) else -1
        print(f"states differ ({len(state_a)} and {len(state_b)} bytes, first at {at})")
        return 1
    print(f"same state: {len(state_a)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
