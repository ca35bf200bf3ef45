#!/usr/bin/env python3
"""Planning time for large clusters across the whole schedule library.

Runs `pipec plan` (every schedule of examples/) for each case and prints the
candidates simulated, the wall time and the peak resident memory, with 1 thread
and with all cores, in two spaces:

  pinned   t = 1, b = 1, no recomputation, ZeRO 1 given: the space every pipec
           searched before the whole-layout search (P, dp, ep, M, v)
  search   the defaults: t, cp, b, recomputation and ZeRO searched too

  deepseek-v3  DeepSeek-V3 (671B MoE) on 2048 H800s, batch 15360 x 4096
  llama-2-70b  Llama-2-70B on 1024 H100s, batch 1024 x 4096
  llama-70b-256 Llama-2-70B on 256 H800s, batch 1024 x 4096 (issue 23's case)
  gpt3-175b    GPT-3 175B on 2048 H100s, batch 1536 x 2048

With --baseline OTHER_PIPEC, each pinned case also runs OTHER_PIPEC (an older
build) side by side, and prints new / old wall-time ratios.

usage: bench_plan.py PIPEC [--baseline OLD_PIPEC] [--repeat N] [--cases a,b]
"""
import argparse
import json
import os
import resource
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HF = os.path.join(HERE, "..", "unit", "Inputs", "hf")

CASES = {
    "deepseek-v3": ["--model", f"{HF}/deepseek-v3.json", "--cluster", "h800", "--gpus", "2048",
                    "--global-batch", "15360", "--seq-len", "4096"],
    "llama-2-70b": ["--model", f"{HF}/llama-2-70b.json", "--cluster", "h100", "--gpus", "1024",
                    "--global-batch", "1024", "--seq-len", "4096"],
    "llama-70b-256": ["--model", f"{HF}/llama-2-70b.json", "--cluster", "h800", "--gpus", "256",
                      "--global-batch", "1024", "--seq-len", "4096"],
    "gpt3-175b": ["--model", f"{HF}/gpt3-175b.json", "--cluster", "h100", "--gpus", "2048",
                  "--global-batch", "1536", "--seq-len", "2048"],
}
PINNED = ["--tp", "1", "--micro-batch-size", "1", "--recompute", "none", "--zero", "1"]


def run(pipec, args, threads):
    cmd = [pipec, "plan", "--format", "json", "--threads", str(threads)] + args
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr}")
    plan = json.loads(proc.stdout)
    return wall, len(plan["candidates"]), plan["recommended"]


def best(pipec, args, threads, repeat):
    times, count = [], 0
    for _ in range(repeat):
        wall, count, _ = run(pipec, args, threads)
        times.append(wall)
    return min(times), count


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pipec")
    parser.add_argument("--baseline", help="an older pipec to run the pinned cases against")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    print(f"{'case':<14} {'space':<7} {'threads':>7} {'candidates':>10} {'wall s':>8}"
          + (f" {'old cands':>9} {'old wall s':>10} {'new/old':>8}" if args.baseline else ""))
    for name in args.cases.split(","):
        case = CASES[name]
        for space, extra in (("pinned", PINNED), ("search", [])):
            for threads in sorted({1, cores}):
                wall, count = best(args.pipec, case + extra, threads, args.repeat)
                line = f"{name:<14} {space:<7} {threads:>7} {count:>10} {wall:>8.3f}"
                if args.baseline and space == "pinned":
                    old_wall, old_count = best(args.baseline, case + extra, threads, args.repeat)
                    line += f" {old_count:>9} {old_wall:>10.3f} {wall / old_wall:>8.2f}"
                print(line, flush=True)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak resident memory of a run: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
