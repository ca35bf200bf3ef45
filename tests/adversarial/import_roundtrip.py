#!/usr/bin/env python3
"""`pipec import` on truncated and mutated PyTorch CSVs: import may refuse
(exit 1 or 2), but what it writes must pass pipec's front end -- `check` may
find the schedule wrong (a missing backward, a deadlock), never unreadable.
The CSVs are the library's own schedules as `emit --target torch-csv` writes them.
usage: import_roundtrip.py PIPEC SOURCE_DIR WORK_DIR
"""
import os
import random
import subprocess
import sys

import harness

# (DualPipe places a stage on two ranks, which `emit --target torch-csv`
# refuses; DualPipeV has the same overlap pairs with one rank per stage.)
SCHEDULES = [("dualpipev.pipe", ["-D", "P=4", "-D", "M=8"]),
             ("zbv.pipe", ["-D", "P=2", "-D", "M=4"]),
             ("interleaved_1f1b.pipe", ["-D", "P=2", "-D", "M=4"])]
MUTATIONS = 300
# Kinds check reports on a file it cannot read as a schedule at all.
FRONT_END_KINDS = ("[SyntaxError]", "[NestingTooDeep]", "[InvalidUTF8]", "[UnexpectedCharacter]",
                   "[IntegerTooLarge]", "[TopologyOutOfRange]", "[OpLimitExceeded]",
                   "[PlacementOutOfRange]", "[SlotConflict]", "[UndefinedName]",
                   "[EmptyChunk]", "[MicrobatchNotOnChunk]", "[MicrobatchOutOfRange]",
                   "[FlowGap]", "[FlowOverlap]", "[CopiesExceeded]", "[UnusedLet]")
CELL_BYTES = b"0123456789FBIW(;),\n OVERLAP_\r"


def mutate(text, rng):
    data = bytearray(text)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(data) + 1)
        op = rng.randrange(3)
        if op == 0 and i < len(data):
            data[i] = rng.choice(CELL_BYTES)
        elif op == 1:
            data[i:i] = bytes([rng.choice(CELL_BYTES)])
        elif i < len(data):
            del data[i]
    return bytes(data)


def main():
    pipec, source_dir, workdir = harness.main_args()
    suite = harness.Suite("import round trip", pipec, workdir)
    rng = random.Random(0xc5f)
    inputs = []
    for name, defines in SCHEDULES:
        csv = subprocess.run([pipec, "emit", os.path.join(source_dir, "examples", name),
                              "--target", "torch-csv", *defines],
                             check=True, capture_output=True).stdout
        stem = name[:-len(".pipe")]
        inputs += [(f"{stem}-cut{cut}", csv[:cut]) for cut in range(0, len(csv), 3)]
        inputs += [(f"{stem}-mut{i}", mutate(csv, rng)) for i in range(MUTATIONS // 3)]
    for label, data in inputs:
        path = harness.write(os.path.join(workdir, label + ".csv"), data)
        out = os.path.join(workdir, label + ".pipe")
        if not suite.case(f"import {label}", [pipec, "import", "--from", "torch-csv", path,
                                             "-o", out], input_text=data):
            continue
        if not os.path.exists(out):
            continue
        suite.runs += 1
        proc = subprocess.run([pipec, "check", out], capture_output=True, timeout=60,
                              preexec_fn=harness._limit_memory)
        err = proc.stderr.decode("utf-8", "replace")
        bad = [kind for kind in FRONT_END_KINDS if kind in err]
        if proc.returncode not in (0, 1) or bad:
            suite.failures.append((f"check imported {label}", [pipec, "check", out],
                                   f"check exit {proc.returncode}, {bad}:\n{err[-600:]}", data))
    return suite.finish()


if __name__ == "__main__":
    sys.exit(main())
