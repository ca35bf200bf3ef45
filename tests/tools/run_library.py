#!/usr/bin/env python3
"""Builds every library schedule at small sizes with `pipec build --target cpu`
and runs each program with --check in fp64 for both built-in models (dense MLP
and MoE), and at P = 2 also with the MoE experts sharded over 2 expert-parallel
replicas: loss and every gradient must match the single-device reference within
1e-10, and the measured peak activations must equal the compiler's prediction.

usage: run_library.py PIPEC EXAMPLES_DIR WORK_DIR
"""
import pathlib
import subprocess
import sys

# Per schedule: the micro-batch counts to run at a given P (its minimum and a bit above).
SIZES = {
    "gpipe": lambda p: [1, p + 2],
    "1f1b": lambda p: [p, p + 2],
    "interleaved_1f1b": lambda p: [p, 2 * p],
    "zb_h1": lambda p: [p, p + 2],
    "zb_h2": lambda p: [p, 2 * p + 1],
    "zbv": lambda p: [p, 2 * p + 1],
    "chimera": lambda p: [p, 2 * p],
    "dualpipe": lambda p: [2 * p, 2 * p + 2],
    "dualpipev": lambda p: [2 * p, 2 * p + 1],
}


def main(pipec, examples, work):
    work = pathlib.Path(work)
    work.mkdir(parents=True, exist_ok=True)
    built = runs = expertParallel = 0
    for name, sizes in SIZES.items():
        for p in (2, 4):
            for m in sizes(p):
                exe = work / f"{name}_P{p}_M{m}"
                build = subprocess.run([pipec, "build", f"{examples}/{name}.pipe", "--target", "cpu",
                                        "-D", f"P={p}", "-D", f"M={m}", "-o", str(exe)],
                                       capture_output=True, text=True)
                if build.returncode != 0:
                    sys.exit(f"build of {name} P={p} M={m} failed:\n{build.stderr}")
                built += 1
                variants = [["--model", "mlp"], ["--model", "moe"]]
                if p == 2:
                    variants.append(["--model", "moe", "--ep", "2"])
                for variant in variants:
                    run = subprocess.run([str(exe), "--check", "--dtype", "fp64", "--hidden", "8",
                                          "--seq", "4", "--timeout", "60"] + variant,
                                         capture_output=True, text=True)
                    if run.returncode != 0 or "PASS" not in run.stdout:
                        sys.exit(f"{name} P={p} M={m} {' '.join(variant)} failed "
                                 f"(exit {run.returncode}):\n{run.stdout}{run.stderr}")
                    runs += 1
                    expertParallel += "--ep" in variant
    print(f"{built} programs built, {runs} runs passed the fp64 check "
          f"({expertParallel} with 2 expert-parallel replicas)")


if __name__ == "__main__":
    main(*sys.argv[1:4])
