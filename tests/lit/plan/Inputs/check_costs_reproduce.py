#!/usr/bin/env python3
"""Feeds candidates' `costs` from `pipec plan --format json` back to `pipec sim`.

For each candidate checked, writes its costs object to a file, runs
`pipec sim SCHEDULE -D NAME=VALUE... --costs FILE --format json` and compares
sim's mean bubble / makespan with the plan's bubble_fraction, and sim's makespan
plus the plan's tail with its step time. Usage:
  check_costs_reproduce.py PIPEC TMPDIR -- PLAN-ARGUMENTS...
Prints "reproduced N candidates" or exits non-zero naming the first mismatch.
"""
import json
import os
import subprocess
import sys


def main():
    pipec, tmp = sys.argv[1], sys.argv[2]
    plan_args = sys.argv[sys.argv.index("--") + 1:]
    plan = json.loads(subprocess.run([pipec, "plan", "--format", "json"] + plan_args,
                                     capture_output=True, text=True, check=False).stdout)
    candidates = plan["candidates"]
    if not candidates:
        sys.exit("the plan has no candidates")
    os.makedirs(tmp, exist_ok=True)
    # Every schedule's first candidate and every fifth one: all shapes, bounded time.
    seen, chosen = set(), []
    for i, c in enumerate(candidates):
        if c["schedule"] not in seen or i % 5 == 0:
            seen.add(c["schedule"])
            chosen.append(c)
    for n, c in enumerate(chosen):
        costs = os.path.join(tmp, f"costs{n}.json")
        with open(costs, "w") as f:
            json.dump(c["costs"], f)
        cmd = [pipec, "sim", c["schedule"], "--costs", costs, "--format", "json"]
        for name, value in c["params"].items():
            cmd += ["-D", f"{name}={value}"]
        sim = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        totals = sim["totals"]
        bubble = totals["mean_bubble"] / sim["makespan"] if sim["makespan"] > 0 else 0
        label = f"{c['name']} {c['params']} ep={c['expert_parallel']}"
        if abs(bubble - c["bubble_fraction"]) > 1e-9 * max(1, abs(bubble)):
            sys.exit(f"{label}: sim's bubble fraction {bubble}, the plan's {c['bubble_fraction']}")
        step = sim["makespan"] + c["tail_s"]
        if abs(step - c["step_time_s"]) > 1e-9 * step:
            sys.exit(f"{label}: sim's makespan + tail {step}, the plan's step {c['step_time_s']}")
    print(f"reproduced {len(chosen)} candidates of {len(candidates)}")


if __name__ == "__main__":
    main()
