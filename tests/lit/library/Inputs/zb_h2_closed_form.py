#!/usr/bin/env python3
"""ZB-H2's bubble and memory against their closed forms, and against ZB-H1.

For each cost set (F, B, W; I = B - W) and P, M >= 2P, every rank of ZB-H2 idles
(P-1) max(F, F+I-2W) and peaks at 2P micro-batches (min(M, 2P) below), and
ZB-H1 is longer by (P-1) max(0, min(W, I-W)).

usage: zb_h2_closed_form.py PIPEC EXAMPLES_DIR
"""
import json
import subprocess
import sys

COSTS = [(1, 2, 1), (1, 2, 0.5), (1, 2, 0.25), (2, 3, 1), (1, 3, 0.5), (0.5, 2, 0.5), (1, 1.5, 1)]


def simulate(pipec, path, p, m, f, b, w):
    cmd = [pipec, "sim", path, "--format", "json", "-D", f"P={p}", "-D", f"M={m}",
           "--cost", f"F={f}", "--cost", f"B={b}", "--cost", f"W={w}"]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def main(pipec, examples):
    cases = 0
    for f, b, w in COSTS:
        i = b - w
        for p in (1, 2, 3, 4, 8, 16):
            for m in sorted({p, 2 * p, 2 * p + 1, 4 * p + 3, 8 * p}):
                h2 = simulate(pipec, f"{examples}/zb_h2.pipe", p, m, f, b, w)
                for r, rank in enumerate(h2["ranks"]):
                    if rank["peak_activations"] != min(m, 2 * p):
                        sys.exit(f"F={f} B={b} W={w} P={p} M={m}: rank {r} peaks at "
                                 f"{rank['peak_activations']}, expected {min(m, 2 * p)}")
                    want = (p - 1) * max(f, f + i - 2 * w)
                    if m >= 2 * p and abs(rank["bubble"] - want) > 1e-9:
                        sys.exit(f"F={f} B={b} W={w} P={p} M={m}: rank {r} idles "
                                 f"{rank['bubble']}, expected {want}")
                if m >= 2 * p:
                    h1 = simulate(pipec, f"{examples}/zb_h1.pipe", p, m, f, b, w)
                    gain = h1["makespan"] - h2["makespan"]
                    if abs(gain - (p - 1) * max(0, min(w, i - w))) > 1e-9:
                        sys.exit(f"F={f} B={b} W={w} P={p} M={m}: ZB-H1 longer by {gain}")
                cases += 1
    print(f"closed forms hold in {cases} cases")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
