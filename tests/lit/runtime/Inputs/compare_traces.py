"""Compares a program's --trace with `pipec sim --trace` of the same schedule:
the same step names on every rank, and an arrow per message whose start and
end lie inside the program's slices. Prints a summary or the differences."""
import json
import sys
from collections import Counter


def events(path):
    return json.load(open(path))["traceEvents"]


def steps(trace):
    """rank -> Counter of compute slice names."""
    out = {}
    for e in trace:
        if e["ph"] == "X" and e.get("cat") == "compute":
            out.setdefault(e["pid"], Counter())[e["name"]] += 1
    return out


def inside(slices, pid, ts):
    # Times are printed to 0.001 us: allow for the rounding.
    return any(s["pid"] == pid and s["ts"] - 0.002 <= ts <= s["ts"] + s["dur"] + 0.002 for s in slices)


def main(sim_path, program_path):
    sim, program = events(sim_path), events(program_path)
    problems = []
    sim_steps, program_steps = steps(sim), steps(program)
    for rank in sorted(set(sim_steps) | set(program_steps)):
        want, got = sim_steps.get(rank, Counter()), program_steps.get(rank, Counter())
        if want != got:
            problems.append("rank %d: only in sim %s, only in program %s"
                            % (rank, sorted((want - got).elements()), sorted((got - want).elements())))
    slices = [e for e in program if e["ph"] == "X"]
    starts = {e["id"]: e for e in program if e["ph"] == "s"}
    ends = {e["id"]: e for e in program if e["ph"] == "f"}
    sim_arrows = {e["id"] for e in sim if e["ph"] == "s"}
    if set(starts) != set(ends) or set(starts) != sim_arrows:
        problems.append("arrows: %d starts, %d ends, %d in sim" % (len(starts), len(ends), len(sim_arrows)))
    for id, s in starts.items():
        f = ends.get(id)
        if not inside(slices, s["pid"], s["ts"]) or (f and not inside(slices, f["pid"], f["ts"])):
            problems.append("arrow %d is not bound to slices at both ends" % id)
        if f and f["ts"] < s["ts"]:
            problems.append("arrow %d points back in time" % id)
    for p in problems:
        print(p)
    if not problems:
        print("%d steps named as the simulator names them on %d ranks, %d arrows"
              % (len(slices), len(program_steps), len(starts)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
