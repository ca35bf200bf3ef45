#!/usr/bin/env python3
"""Throughput of the whole pipeline: parse + check (+ simulate) on large schedules.

For each schedule and (P, M) it runs `pipec sim --format json` (parse, resolve,
elaborate, every check, simulation) and `pipec check --time-passes`, best of N,
and prints ops, per-phase times, end-to-end wall time and ops per second, so
linear scaling is visible: doubling M doubles the time. The last two columns are
the wall time of `pipec emit --target cpu|cuda` (the CUDA program adds the
stream lowering and is about six times larger).

usage: bench_pipeline.py PIPEC SCHEDULE.pipe... [--repeat N] [--grid P:M,...]
"""
import argparse
import json
import re
import subprocess
import time


def timed(cmd):
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{result.stderr}")
    return (time.perf_counter() - start) * 1000, result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pipec")
    parser.add_argument("schedules", nargs="+")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--grid", default="8:64,8:512,8:4096,16:512,16:4096,32:512,32:4096,"
                                          "64:128,64:256,64:512,64:1024,64:2048,64:4096")
    args = parser.parse_args()
    print(f"{'schedule':<12} {'P':>3} {'M':>5} {'ops':>9} {'elab ms':>8} {'check ms':>9} "
          f"{'sim e2e ms':>11} {'Mops/s':>7} {'cpu emit':>9} {'cuda emit':>10}")
    for schedule in args.schedules:
        for cell in args.grid.split(","):
            p, m = (int(x) for x in cell.split(":"))
            defines = ["-D", f"P={p}", "-D", f"M={m}"]
            runs = [timed([args.pipec, "sim", schedule, "--format", "json"] + defines)
                    for _ in range(args.repeat)]
            wall = min(r[0] for r in runs)
            ops = json.loads(runs[0][1].stdout)["totals"]["ops"]
            phases = []
            for _ in range(args.repeat):
                _, result = timed([args.pipec, "check", "--time-passes", schedule] + defines)
                phases.append(dict((k, float(v)) for k, v in
                                   re.findall(r"^\s+(\w+)\s+([\d.]+) ms$", result.stderr, re.M)))
            elab = min(p.get("elaborate", 0) for p in phases)
            check = min(p.get("check", 0) for p in phases)
            emit = {target: min(timed([args.pipec, "emit", schedule, "--target", target, "-o",
                                       "/dev/null"] + defines)[0] for _ in range(args.repeat))
                    for target in ("cpu", "cuda")}
            name = schedule.rsplit("/", 1)[-1].removesuffix(".pipe")
            print(f"{name:<12} {p:>3} {m:>5} {ops:>9} {elab:>8.1f} {check:>9.1f} {wall:>11.1f} "
                  f"{ops / wall / 1000:>7.2f} {emit['cpu']:>9.1f} {emit['cuda']:>10.1f}")


if __name__ == "__main__":
    main()
