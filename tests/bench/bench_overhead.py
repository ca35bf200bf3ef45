#!/usr/bin/env python3
"""The CPU runtime's own cost per op: 1F1B with `--model empty` (ops do no
work, messages are 1x1 tensors), M = 512, at P = 2 and P = 4, in microseconds
per op (a step's wall time times the ranks, over the ops), next to the same
hand-offs done by a plain loop on one thread. With --baseline, a second pipec
(an older build, e.g. main's) builds the same programs against its own runtime
and its numbers stand beside these. A benchmark, not a test: nothing is asserted.

usage: bench_overhead.py PIPEC [--baseline PIPEC] [--examples DIR] [--repeat N]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

LINE = re.compile(r"runtime overhead: ([0-9.]+) us per op .* plain loop: ([0-9.]+) us per op")


def build(pipec, example, P, M, out):
    subprocess.run([pipec, "build", example, "--target", "cpu", "-D", f"P={P}", "-D", f"M={M}",
                    "-o", out], check=True, stdout=subprocess.DEVNULL)


def measure(exe, extra, repeat):
    """Median over `repeat` runs of the last of 5 steps: (program, plain loop)."""
    runs = []
    for _ in range(repeat):
        text = subprocess.run([exe, "--model", "empty", "--steps", "5"] + extra, check=True,
                              capture_output=True, text=True).stdout
        m = LINE.search(text)
        if not m:
            sys.exit(f"no overhead line in the output of {exe}:\n{text}")
        runs.append((float(m.group(1)), float(m.group(2))))
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pipec")
    ap.add_argument("--baseline", help="a second pipec to compare with (before)")
    ap.add_argument("--examples", default=os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("-M", type=int, default=512)
    args = ap.parse_args()
    example = os.path.join(args.examples, "1f1b.pipe")
    print(f"1F1B, M = {args.M}, --model empty: us per op (median of {args.repeat} runs, "
          f"{os.cpu_count()} CPUs)")
    head = "| P | plain loop | this runtime | this, --stream-threads |"
    if args.baseline:
        head += " baseline | baseline / this |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    with tempfile.TemporaryDirectory() as tmp:
        for P in (2, 4):
            exe = os.path.join(tmp, f"after{P}")
            build(args.pipec, example, P, args.M, exe)
            after, loop = measure(exe, [], args.repeat)
            threads, _ = measure(exe, ["--stream-threads"], args.repeat)
            row = f"| {P} | {loop:.3f} | {after:.3f} | {threads:.3f} |"
            if args.baseline:
                base_exe = os.path.join(tmp, f"before{P}")
                build(args.baseline, example, P, args.M, base_exe)
                before, _ = measure(base_exe, [], args.repeat)
                row += f" {before:.3f} | {before / after:.1f}x |"
            print(row, flush=True)


if __name__ == "__main__":
    main()
