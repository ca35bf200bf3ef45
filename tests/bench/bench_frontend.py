#!/usr/bin/env python3
"""Front-end throughput: parse + resolve + elaborate (+ IR printing) on large schedules.

Runs `pipec emit --target ir` for a grid of (P, M) and reports, per size, the
best-of-N elaboration time, the end-to-end wall time and ops per second, so
linear scaling is visible: doubling M should double the time.

usage: bench_frontend.py PIPEC SCHEDULE.pipe [--repeat N] [--grid P:M,P:M,...]
"""
import argparse
import re
import subprocess
import time


def run_once(pipec, schedule, p, m):
    cmd = [pipec, "emit", schedule, "--target", "ir", "-D", f"P={p}", "-D", f"M={m}",
           "-o", "/dev/null", "--time-passes"]
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = (time.perf_counter() - start) * 1000
    passes = dict((name, float(ms)) for name, ms in
                  re.findall(r"^\s+(\w+)\s+([\d.]+) ms$", result.stderr, re.M))
    return wall, passes


def count_ops(pipec, schedule, p, m):
    out = subprocess.run([pipec, "emit", schedule, "--target", "ir", "-D", f"P={p}", "-D", f"M={m}"],
                         capture_output=True, text=True, check=True).stdout
    return sum(len(line.split()) - 2 for line in out.splitlines())  # "rank", "N:" excluded


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pipec")
    parser.add_argument("schedule")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--grid", default="8:64,8:512,8:4096,16:4096,32:4096,64:512,64:1024,64:2048,64:4096")
    args = parser.parse_args()
    print(f"{'P':>4} {'M':>6} {'ops':>9} {'elaborate ms':>13} {'wall ms':>9} {'Mops/s (wall)':>14}")
    for cell in args.grid.split(","):
        p, m = (int(x) for x in cell.split(":"))
        ops = count_ops(args.pipec, args.schedule, p, m)
        runs = [run_once(args.pipec, args.schedule, p, m) for _ in range(args.repeat)]
        wall = min(r[0] for r in runs)
        elab = min(r[1].get("elaborate", 0.0) for r in runs)
        print(f"{p:>4} {m:>6} {ops:>9} {elab:>13.2f} {wall:>9.2f} {ops / wall / 1000:>14.2f}")


if __name__ == "__main__":
    main()
