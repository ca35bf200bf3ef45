#!/usr/bin/env python3
"""The README's finding on schedules under real conditions (issue 24): every library
schedule at P = 8 and 16, M = 2P and 4P, under lognormal per-op jitter (CV 0.1,
1000 samples, seed 1), without and with one straggler (rank P/2 at 1.1x), ranked
by p99. Prints one markdown table per point: the deterministic step, the mean,
p99, the tail (p99 / deterministic - 1), and the rank by mean and by p99.

usage: variability_finding.py PIPEC EXAMPLES_DIR [--samples N]
Each table comes from one command, printed above it, that reproduces it."""
import re
import subprocess
import sys


def run(pipec, examples, p, m, samples, slow):
    files = sorted(f"{examples}/{n}.pipe" for n in
                   ["gpipe", "1f1b", "zb_h1", "zb_h2", "zbv", "interleaved_1f1b",
                    "chimera", "dualpipe", "dualpipev"])
    cmd = [pipec, "sim", "--compare", *files, "-D", f"P={p}", "-D", f"M={m}",
           "--jitter", "lognormal:0.1", "--samples", str(samples), "--seed", "1",
           "--rank-by", "p99"]
    if slow is not None:
        cmd += ["--slow", f"{slow}=1.1"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        cells = line.split()
        if len(cells) == 14 and cells[1] == "-":
            rows.append({"schedule": cells[0], "det": float(cells[2]), "mean": float(cells[10]),
                         "p99": float(cells[13])})
    shown = " ".join(c if "/" not in c else "examples/" + c.rsplit("/", 1)[1] for c in cmd[1:])
    return "pipec " + shown.replace(examples + "/", "examples/"), rows


def table(title, command, rows):
    by_mean = sorted(rows, key=lambda r: r["mean"])
    print(f"\n{title}\n\n`{command}`\n")
    print("| schedule | deterministic | mean | p99 | p99 tail | rank by mean | rank by p99 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for i, r in enumerate(rows):
        tail = 100 * (r["p99"] / r["det"] - 1)
        print(f"| {r['schedule']} | {r['det']:g} | {r['mean']:.2f} | {r['p99']:.2f} | "
              f"{tail:.1f}% | {by_mean.index(r) + 1} | {i + 1} |")


def main():
    pipec, examples = sys.argv[1], sys.argv[2].rstrip("/")
    samples = int(sys.argv[sys.argv.index("--samples") + 1]) if "--samples" in sys.argv else 1000
    for p in (8, 16):
        for m in (2 * p, 4 * p):
            for slow in (None, p // 2):
                command, rows = run(pipec, examples, p, m, samples, slow)
                what = "no straggler" if slow is None else f"rank {slow} at 1.1x"
                table(f"P={p}, M={m}, {what}", command, rows)


if __name__ == "__main__":
    main()
