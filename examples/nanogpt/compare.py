"""Compares the per-step losses of two runs (a program's output and
train_reference.py's), step by step; exit 1 when a step is missing or the
relative difference exceeds --tolerance.

    python3 compare.py pipeline.log reference.log --tolerance 1e-10
"""
import argparse
import sys

from losses import read_losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("reference")
    parser.add_argument("--tolerance", type=float, default=1e-10)
    args = parser.parse_args()
    run, ref = read_losses(args.run), read_losses(args.reference)
    if not ref:
        print(f"compare: no step losses in {args.reference}", file=sys.stderr)
        return 1
    worst, worst_step = 0.0, None
    for step in sorted(ref):
        if step not in run:
            print(f"compare: step {step} is missing from {args.run}", file=sys.stderr)
            return 1
        error = abs(run[step] - ref[step]) / max(abs(ref[step]), 1e-300)
        if error >= worst:
            worst, worst_step = error, step
    first, last = min(ref), max(ref)
    verdict = "PASS" if worst <= args.tolerance else "FAIL"
    print(f"compare: {len(ref)} steps, loss {ref[first]:.6g} -> {ref[last]:.6g} "
          f"({ref[last] / ref[first]:.3f}x); max relative difference {worst:.3g} at step {worst_step}; "
          f"tolerance {args.tolerance:g}: {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
