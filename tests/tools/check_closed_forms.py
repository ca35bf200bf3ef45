#!/usr/bin/env python3
"""Checks pipec's simulator against the closed-form bubbles of the literature.

With F=1, B=2, W=1, FB=3 and p2p=0 (the costs the formulas assume):
  1F1B       (P-1)(F+B) on every rank
  ZB-H1      (P-1)(F+I-W) on every rank, I = B-W (valid for W <= F)
  DualPipe   (PP/2-1)(F&B+B-3W) on every rank, PP = P
  DualPipeV  the same with PP = its number of stages (2P)
The costs are given per stage, as the formulas count them (pipec's defaults
would be one rank's share divided by the stages a rank holds).
(Latency breaks these forms; tests/lit/sim/hand-computed.test covers it.)
Also: peak activations P-r for 1F1B, P for ZB-H1 (its W's keep activations
alive), P+1 for DualPipe and 2P+1 for DualPipeV.

usage: check_closed_forms.py PIPEC EXAMPLES_DIR
"""
import json
import subprocess
import sys

F, B, W, FB = 1.0, 2.0, 1.0, 3.0


def simulate(pipec, path, p, m, *costs):
    cmd = [pipec, "sim", path, "--format", "json", "-D", f"P={p}", "-D", f"M={m}",
           "--cost", f"FB={FB}"] + [f"--cost={c}" for c in ("F=1", "B=2", "W=1") + costs]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def expect(label, ranks, bubble, peaks):
    for r, rank in enumerate(ranks):
        if abs(rank["bubble"] - bubble) > 1e-9:
            sys.exit(f"{label}: rank {r} bubble {rank['bubble']}, expected {bubble}")
        if rank["peak_activations"] != peaks(r):
            sys.exit(f"{label}: rank {r} peak {rank['peak_activations']}, expected {peaks(r)}")


def main(pipec, examples):
    cases = 0
    for p in (2, 4, 8, 16):
        for m in (p, 2 * p, 4 * p + 1):
            out = simulate(pipec, f"{examples}/1f1b.pipe", p, m)
            expect(f"1F1B P={p} M={m}", out["ranks"], (p - 1) * (F + B), lambda r: p - r)
            cases += 1
    for p in (2, 4, 8, 16):
        for m in (p, 2 * p, 4 * p + 1):
            out = simulate(pipec, f"{examples}/zb_h1.pipe", p, m)
            expect(f"ZB-H1 P={p} M={m}", out["ranks"], (p - 1) * (F + (B - W) - W), lambda r: p)
            cases += 1
    for p in (2, 4, 6, 8, 16):
        for m in (2 * p, 2 * p + 2, 4 * p, 64 if 64 >= 2 * p else 2 * p):
            out = simulate(pipec, f"{examples}/dualpipe.pipe", p, m)
            expect(f"DualPipe P={p} M={m}", out["ranks"], (p / 2 - 1) * (FB + B - 3 * W),
                   lambda r: p + 1)
            cases += 1
    for p in (2, 3, 4, 8, 16):
        for m in (2 * p, 2 * p + 1, 4 * p, 64 if 64 >= 2 * p else 2 * p):
            out = simulate(pipec, f"{examples}/dualpipev.pipe", p, m)
            expect(f"DualPipeV P={p} M={m}", out["ranks"], (2 * p / 2 - 1) * (FB + B - 3 * W),
                   lambda r: 2 * p + 1)
            cases += 1
    print(f"closed forms hold in {cases} cases")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
