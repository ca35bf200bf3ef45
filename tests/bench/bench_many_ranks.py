#!/usr/bin/env python3
"""Elaboration and checking with very many ranks, one stage per rank.

Each rank holds one stage and runs a handful of ops, so the work is linear in the
number of ranks; any per-rank cost that grows with the rank count (a hash map
whose keys all collide, a table sized ranks x chunks) shows up as a time or
memory that quadruples when P doubles. For P = 2^14, 2^16, 2^18 it runs
`pipec check --time-passes` and `pipec sim --time-passes` on three schedules and
prints, for each run, the elaboration and check phases, the whole run's wall time
and its peak resident memory (sim's simulation is wall minus the phases):

  one-flow   stage s on rank s, chunk 0; F then B on every rank
  four-flows four flows of one micro-batch each (8 ops per rank)
  high-chunk stage s on rank s, chunk P-1 (only one chunk of P is held per rank)

usage: bench_many_ranks.py PIPEC [--sizes 14,16,18] [--commands check,sim]
"""
import argparse
import os
import re
import subprocess
import tempfile
import time

SCHEDULES = {
    "one-flow": """schedule one_flow(P = 4) {
  ranks P; stages P; microbatches 1;
  place stage s -> rank s;
  rank r { F; B; }
}
""",
    "four-flows": """schedule four_flows(P = 4) {
  ranks P; stages P; microbatches 4;
  flow a: microbatches 0..1 { place stage s -> rank s; }
  flow b: microbatches 1..2 { place stage s -> rank s; }
  flow c: microbatches 2..3 { place stage s -> rank s; }
  flow d: microbatches 3..4 { place stage s -> rank s; }
  rank r { for i in 0..4 { F; } for i in 0..4 { B; } }
}
""",
    "high-chunk": """schedule high_chunk(P = 4) {
  ranks P; stages P; microbatches 1;
  place stage s -> rank s chunk P - 1;
  rank r { F(P - 1); B(P - 1); }
}
""",
}


def run(pipec, command, path, p):
    """Runs pipec once; returns (elab ms, check ms, wall s, peak RSS MiB)."""
    with tempfile.TemporaryFile(mode="w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([pipec, command, "--time-passes", path, "-D", f"P={p}"],
                                stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak, not the largest so far
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read()
    if proc.returncode != 0:
        raise SystemExit(f"pipec {command} {path} -D P={p} failed:\n{stderr[-2000:]}")
    phases = dict((k, float(v)) for k, v in re.findall(r"^\s+(\w+)\s+([\d.]+) ms$", stderr, re.M))
    return phases.get("elaborate", 0), phases.get("check", 0), wall, usage.ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pipec")
    parser.add_argument("--sizes", default="14,16,18", help="log2 of the rank counts")
    parser.add_argument("--schedules", default=",".join(SCHEDULES))
    parser.add_argument("--commands", default="check,sim", help="pipec subcommands to run")
    args = parser.parse_args()
    print(f"{'schedule':<11} {'command':<7} {'P':>8} {'elab ms':>9} {'check ms':>9} {'wall s':>7} "
          f"{'peak MiB':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.schedules.split(","):
            path = os.path.join(tmp, name + ".pipe")
            with open(path, "w") as f:
                f.write(SCHEDULES[name])
            for log2 in (int(x) for x in args.sizes.split(",")):
                p = 1 << log2
                for command in args.commands.split(","):
                    elab, check, wall, peak = run(args.pipec, command, path, p)
                    print(f"{name:<11} {command:<7} {p:>8} {elab:>9.1f} {check:>9.1f} {wall:>7.2f} "
                          f"{peak:>9.0f}", flush=True)


if __name__ == "__main__":
    main()
