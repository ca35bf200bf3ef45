#!/usr/bin/env python3
"""Throughput and memory of `pipec check` + `pipec sim`, and in-process re-simulation.

For each schedule and size (a target op count; M is scaled to reach it at the
given P) it runs `pipec sim` (parse, elaborate, every check, simulation, text
output), best of N, and prints ops, wall time, ops per second and peak memory
in bytes per op (peak RSS, which includes this script's own ~10 MB: read the
smallest sizes with that in mind). With --baseline OLD_PIPEC the same runs are made with the old
binary, side by side on the same machine, and the ratios (old / new: above 1 is
better) are printed. With --resim BENCH it also prints the in-process
re-simulation time of one checked schedule under new costs (tests/bench/
resim_bench.cpp), against the old binary's end-to-end `sim` when there is one.

usage: bench_pipeline.py PIPEC SCHEDULE.pipe... [--baseline OLD_PIPEC] [--resim BENCH]
                         [--repeat N] [--ops 1e5,1e6,1e7] [-P 64]
"""
import argparse
import os
import re
import subprocess
import tempfile
import time


def run(cmd):
    """Wall milliseconds, peak RSS bytes and stdout of one run."""
    start = time.perf_counter()
    with open(os.devnull, "w") as null:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=null, text=True)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed")
    return wall, usage.ru_maxrss * 1024, out


def best(cmd, repeat):
    runs = [run(cmd) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs), runs[0][2]


def ops_of(pipec, schedule, defines):
    # Streamed through a file: a child's peak RSS counts the parent's at spawn
    # time, so this script must not hold a large JSON document in memory.
    with tempfile.TemporaryFile("w+") as out:
        subprocess.run([pipec, "sim", schedule, "--format", "json"] + defines, stdout=out,
                       stderr=subprocess.DEVNULL, check=True)
        out.seek(0)
        ops = None
        for line in out:  # the last "ops" is the totals' one
            match = re.match(r'\s*"ops": (\d+)', line)
            if match:
                ops = int(match.group(1))
        return ops


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pipec")
    parser.add_argument("schedules", nargs="+")
    parser.add_argument("--baseline", help="an older pipec binary to compare with")
    parser.add_argument("--resim", help="the pipec_resim_bench binary")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ops", default="1e5,1e6,1e7", help="target op counts")
    parser.add_argument("-P", type=int, default=64)
    args = parser.parse_args()
    targets = [float(x) for x in args.ops.split(",")]
    P = args.P

    header = f"{'schedule':<10} {'P':>3} {'M':>6} {'ops':>9} {'ms':>8} {'Mops/s':>7} {'B/op':>6}"
    if args.baseline:
        header += f" {'old ms':>8} {'old B/op':>8} {'time x':>7} {'mem x':>6}"
    print(header)
    for schedule in args.schedules:
        name = os.path.basename(schedule).removesuffix(".pipe")
        # Ops grow linearly in M: probe once, then scale M (a multiple of 2P) to each target.
        probe_m = 8 * P
        probe = ops_of(args.pipec, schedule, ["-D", f"P={P}", "-D", f"M={probe_m}"])
        for target in targets:
            m = max(2 * P, round(target / probe * probe_m / (2 * P)) * 2 * P)
            defines = ["-D", f"P={P}", "-D", f"M={m}"]
            repeat = args.repeat if target < 5e6 else 1
            ops = ops_of(args.pipec, schedule, defines)
            wall, rss, _ = best([args.pipec, "sim", schedule] + defines, repeat)
            line = (f"{name:<10} {P:>3} {m:>6} {ops:>9} {wall:>8.1f} {ops / wall / 1000:>7.2f} "
                    f"{rss / ops:>6.0f}")
            if args.baseline:
                old_wall, old_rss, _ = best([args.baseline, "sim", schedule] + defines, repeat)
                line += (f" {old_wall:>8.1f} {old_rss / ops:>8.0f} {old_wall / wall:>7.2f} "
                         f"{old_rss / rss:>6.2f}")
            print(line, flush=True)

    if args.resim:
        print(f"\n{'re-simulation':<14} {'P':>3} {'M':>5} {'ops':>8} {'plan ms':>8} "
              f"{'resim ms':>9} {'cpu ms':>7}" + (f" {'old sim ms':>10} {'x':>7}" if args.baseline else ""))
        for schedule in args.schedules:
            name = os.path.basename(schedule).removesuffix(".pipe")
            for m in (512, 4096):
                out = run([args.resim, schedule, str(P), str(m), "50"])[2].split()
                fields = dict(zip(out[0::2], out[1::2]))
                line = (f"{name:<14} {P:>3} {m:>5} {fields['ops']:>8} "
                        f"{float(fields['plan_ms']):>8.2f} {float(fields['resim_median_ms']):>9.2f} "
                        f"{float(fields['resim_cpu_median_ms']):>7.2f}")
                if args.baseline:
                    # The old pipec can only re-simulate by running `sim` again.
                    old = best([args.baseline, "sim", schedule, "-D", f"P={P}", "-D", f"M={m}"],
                               args.repeat)[0]
                    line += f" {old:>10.1f} {old / float(fields['resim_median_ms']):>7.0f}"
                print(line, flush=True)


if __name__ == "__main__":
    main()
