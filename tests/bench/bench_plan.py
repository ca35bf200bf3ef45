#!/usr/bin/env python3
"""Planning time for large clusters across the whole schedule library.

Runs `pipec plan` (every schedule of examples/, every pipeline depth, data- and
expert-parallel size and v) for each case and prints the candidates simulated,
the wall time and the peak resident memory, with 1 thread and with all cores:

  deepseek-v3  DeepSeek-V3 (671B MoE) on 2048 H800s, batch 15360 x 4096, ZeRO-1
  llama-2-70b  Llama-2-70B on 1024 H100s, batch 1024 x 4096, ZeRO-1
  gpt3-175b    GPT-3 175B on 2048 H100s, batch 1536 x 2048, ZeRO-1

usage: bench_plan.py PIPEC [--repeat N]
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
                    "--global-batch", "15360", "--seq-len", "4096", "--zero", "1"],
    "llama-2-70b": ["--model", f"{HF}/llama-2-70b.json", "--cluster", "h100", "--gpus", "1024",
                    "--global-batch", "1024", "--seq-len", "4096", "--zero", "1"],
    "gpt3-175b": ["--model", f"{HF}/gpt3-175b.json", "--cluster", "h100", "--gpus", "2048",
                  "--global-batch", "1536", "--seq-len", "2048", "--zero", "1"],
}


def run(pipec, args, threads):
    cmd = [pipec, "plan", "--format", "json", "--threads", str(threads)] + args
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr}")
    plan = json.loads(proc.stdout)
    return wall, len(plan["candidates"]), plan["recommended"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pipec")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    print(f"{'case':<12} {'threads':>7} {'candidates':>10} {'wall s':>8}")
    for name, case in CASES.items():
        for threads in sorted({1, cores}):
            best = min(run(args.pipec, case, threads)[0] for _ in range(args.repeat))
            _, count, _ = run(args.pipec, case, threads)
            print(f"{name:<12} {threads:>7} {count:>10} {best:>8.3f}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak resident memory of a run: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
