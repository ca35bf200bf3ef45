#!/usr/bin/env python3
"""BPipe's balance, checked against the paper's formula over a grid of P and M.

For each size, `pipec check --explain` gives each rank's peak activations for
examples/bpipe.pipe and examples/1f1b.pipe, and `pipec sim` both makespans.
With T = ceil((P+2)/2) (Kim et al. ICML'23: each rank holds about (P+2)/2):
  - a rank that 1F1B makes hold more than T (P - r > T) holds exactly T;
  - every other rank holds at most T, and the most any rank holds is min(P, T)
    where 1F1B's is P;
  - the transfers overlap compute at the default costs: the makespan is 1F1B's.
usage: check_bpipe_balance.py PIPEC EXAMPLES_DIR
"""
import re
import subprocess
import sys


def peaks(pipec, path, p, m):
    out = subprocess.run([pipec, "check", "--explain", "-D", f"P={p}", "-D", f"M={m}", path],
                         capture_output=True, text=True, check=True).stdout
    found = [int(x) for x in re.findall(r"rank \d+: \d+ ops, peak activations (\d+)", out)]
    if len(found) != p:
        raise SystemExit(f"FAIL: P={p} M={m}: expected {p} ranks in --explain of {path}")
    return found


def makespan(pipec, path, p, m):
    out = subprocess.run([pipec, "sim", "-D", f"P={p}", "-D", f"M={m}", path],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"makespan ([0-9.e+-]+)", out).group(1))


def main():
    pipec, examples = sys.argv[1], sys.argv[2]
    bpipe, plain = f"{examples}/bpipe.pipe", f"{examples}/1f1b.pipe"
    checked = 0
    for p in range(1, 18):
        t = (p + 3) // 2
        for m in sorted({p, p + 1, 2 * p + 1, 3 * p}):
            got, base = peaks(pipec, bpipe, p, m), peaks(pipec, plain, p, m)
            where = f"P={p} M={m}: bpipe peaks {got}, 1F1B {base}"
            for r in range(p):
                if base[r] != p - r:
                    raise SystemExit(f"FAIL: {where}: 1F1B rank {r} should hold P - r")
                if p - r > t and got[r] != t:
                    raise SystemExit(f"FAIL: {where}: evictor rank {r} should hold T = {t}")
                if got[r] > t:
                    raise SystemExit(f"FAIL: {where}: rank {r} holds more than T = {t}")
            if max(got) != min(p, t):
                raise SystemExit(f"FAIL: {where}: the most held should be min(P, T) = {min(p, t)}")
            if makespan(pipec, bpipe, p, m) != makespan(pipec, plain, p, m):
                raise SystemExit(f"FAIL: P={p} M={m}: makespan differs from 1F1B's")
            checked += 1
    print(f"PASS {checked} sizes: max peak min(P, ceil((P+2)/2)), makespan 1F1B's")


if __name__ == "__main__":
    main()
