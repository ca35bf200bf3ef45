#!/usr/bin/env python3
"""`pipec synth` against the schedule library, at equal memory.

For each cost set, P and M: every library schedule that accepts (P, M) is
simulated with `pipec sim` (its makespan and its peak activations, the budget it
needs, in `pipec check --max-activations` units); then, for each placement and
each budget a library schedule needs there, `pipec synth` searches the same
placement at that budget, with exactly the cost flags the library schedules were
simulated with. One row per (cost set, P, M, placement, budget): the best library
schedule that fits the budget, what synth found, synth's lower bound, the gap
between them and synth's search time.

Cost sets are given per rank's share of the model (one copy), as the README's
library table is; a stage of a placement with v stages per rank per copy gets
them divided by v (p2p latency is per message and is not divided):

  base    F=1, B=2, W=1 (I=1); an F&B pair costs F+B
  hidden  the same, an F&B pair costs 0.75 (F+B): communication hidden under it
  w05     F=1, B=2, W=0.5 (I=1.5)
  dsv3    a middle stage of DeepSeek-V3 as `pipec plan` costs it (DualPipe, P=8,
          2048 H800s, EP 64, full recomputation), scaled to F=1: I, W, p2p and
          the attention/dispatch/MLP/combine sub-operations that decide a pair

Synth is asked for F&B pairs (--overlap) where the cost set makes a pair cheaper
than its halves, and for --placement bidirectional where the library has
DualPipe and Chimera; when this pipec does not support that, the row says so
(a search without pairs is then run and marked).

usage: synth_table.py PIPEC [--time S] [--sizes P:M,...] [--costs NAME,...]
                      [--markdown] [--json OUT.json] [--keep DIR]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
EXAMPLES = os.path.join(ROOT, "examples")
HF = os.path.join(ROOT, "tests", "unit", "Inputs", "hf")

# Placement families: (synth's --placement, -D v for synth, stages per rank per copy).
FAMILIES = {
    "one": ("one", None, 1),
    "v": ("v", None, 2),
    "interleaved v=2": ("interleaved", 2, 2),
    "bidirectional": ("bidirectional", None, 1),
}

# Library files by placement family, with the -D flags beyond P and M.
LIBRARY = [
    ("gpipe", "one", []),
    ("1f1b", "one", []),
    ("zb_h1", "one", []),
    ("zb_h2", "one", []),
    ("zbv", "v", []),
    ("dualpipev", "v", []),
    ("interleaved_1f1b", "interleaved v=2", ["-D", "v=2"]),
    ("chimera", "bidirectional", []),
    ("dualpipe", "bidirectional", []),
]

SUB_OPS = [f"{op}_{d}" for op in ("attn", "dispatch", "mlp", "combine") for d in ("f", "b")]


def deepseek_costs(pipec):
    """A middle stage of DeepSeek-V3 as the planner costs it, scaled to F = 1."""
    cmd = [pipec, "plan", os.path.join(EXAMPLES, "dualpipe.pipe"), "--model",
           os.path.join(HF, "deepseek-v3.json"), "--cluster", "h800", "--gpus", "2048",
           "--ep", "64", "--global-batch", "15360", "--seq-len", "4096", "--zero", "1",
           "--recompute", "full", "--format", "json"]
    plan = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    cand = next(c for c in plan["candidates"] if c["params"]["P"] == 8)
    costs, stage = cand["costs"], 3
    scale = costs[f"F[{stage}]"]
    out = {k: costs[f"{k}[{stage}]"] / scale for k in ["F", "B", "I", "W"] + SUB_OPS}
    out["p2p"] = costs[f"p2p[{stage}]"] / scale
    return out


def cost_sets(pipec, names):
    sets = {
        "base": {"F": 1, "B": 2, "W": 1},
        "hidden": {"F": 1, "B": 2, "W": 1, "FB": 0.75 * 3},
        "w05": {"F": 1, "B": 2, "W": 0.5},
    }
    if "dsv3" in names:
        sets["dsv3"] = deepseek_costs(pipec)
    return {n: sets[n] for n in names}


def cost_flags(costs, per_rank):
    """--cost flags for one stage of a placement with `per_rank` stages per rank."""
    flags = []
    for name, value in costs.items():
        scaled = value if name == "p2p" else value / per_rank
        flags += ["--cost", f"{name}={float(scaled)!r}"]  # exact: sums stay consistent
    return flags


def pairs_cheaper(costs):
    return "FB" in costs or "attn_f" in costs


def simulate(pipec, name, extra, p, m, flags):
    cmd = [pipec, "sim", os.path.join(EXAMPLES, name + ".pipe"), "-D", f"P={p}", "-D", f"M={m}",
           "--format", "json"] + extra + flags
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return None  # a `require` refuses (P, M): not applicable
    sim = json.loads(proc.stdout)
    return sim["makespan"], max(r["peak_activations"] for r in sim["ranks"])


SUMMARY = re.compile(r"makespan (\S+), lower bound (\S+), gap \S+, peak activations (\d+), (\S+) s")


def synthesize(pipec, family, p, m, budget, flags, overlap, seconds, out):
    placement, v, _ = FAMILIES[family]
    cmd = [pipec, "synth", "--placement", placement, "-D", f"P={p}", "-D", f"M={m}"]
    cmd += ["-D", f"v={v}"] if v else []
    cmd += flags + ["--max-activations", str(budget), "--time", str(seconds), "-o", out]
    cmd += ["--overlap"] if overlap else []
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    match = SUMMARY.search(proc.stderr)
    if proc.returncode == 0 and match:
        # The simulator's own numbers for the written file, under the same flags:
        # full precision, measured exactly as the library rows are.
        sim = subprocess.run([pipec, "sim", out, "--format", "json"] + flags,
                             capture_output=True, text=True, check=True)
        result = json.loads(sim.stdout)
        return {"makespan": result["makespan"], "bound": float(match[2]),
                "peak": max(r["peak_activations"] for r in result["ranks"]),
                "seconds": float(match[4]), "wall": wall}
    message = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
    unsupported = proc.returncode == 2 and "not supported" in proc.stderr
    return {"error": "not supported" if unsupported else f"exit {proc.returncode}: {message}",
            "unsupported": unsupported, "wall": wall}


def rows_for(pipec, cost_name, costs, p, m, seconds, keep):
    library = {}
    for name, family, extra in LIBRARY:
        result = simulate(pipec, name, extra, p, m, cost_flags(costs, FAMILIES[family][2]))
        if result:
            library.setdefault(family, []).append((name, *result))
    # Every library schedule's memory in ranks' shares, to compare across placements.
    shares = [(span, name, peak / FAMILIES[family][2])
              for family, schedules in library.items() for name, span, peak in schedules]
    rows = []
    for family, schedules in library.items():
        flags = cost_flags(costs, FAMILIES[family][2])
        for budget in sorted({peak for _, _, peak in schedules}):
            fits = [(span, name) for name, span, peak in schedules if peak <= budget]
            lib_span, lib_name = min(fits)
            out = os.path.join(keep, f"{cost_name}_{family.split()[0]}_P{p}_M{m}_A{budget}.pipe")
            found = synthesize(pipec, family, p, m, budget, flags, pairs_cheaper(costs), seconds, out)
            if found.get("unsupported") and pairs_cheaper(costs):
                without = synthesize(pipec, family, p, m, budget, flags, False, seconds, out)
                if not without.get("unsupported"):
                    found = dict(without, no_overlap=True)
            room = budget / FAMILIES[family][2]
            any_span, any_name = min((span, name) for span, name, need in shares
                                     if need <= room + 1e-9)
            rows.append({"costs": cost_name, "P": p, "M": m, "placement": family,
                         "budget": budget, "rank_shares": room,
                         "library": lib_name, "library_makespan": lib_span,
                         "any_library": any_name, "any_library_makespan": any_span, **found})
    return rows


def fmt(x):
    return f"{x:.6g}"


def verdict(row):
    if "makespan" not in row:
        return row["error"]
    lib, syn, bound = row["library_makespan"], row["makespan"], row["bound"]
    tol = 1e-9 * max(1.0, lib)
    loose = 1e-5 * max(1.0, lib)  # the bound is read as printed, to 6 digits
    if syn < lib - tol:
        word = f"synth better by {100 * (lib - syn) / lib:.1f}%"
    elif syn <= lib + tol:
        word = "equal"
    else:
        word = f"synth worse by {100 * (syn - lib) / lib:.1f}%"
    if bound < lib - loose and syn > bound + loose and syn >= lib - tol:
        word += f"; bound shows {100 * (lib - bound) / lib:.1f}% room"
    return word + (" (no --overlap)" if row.get("no_overlap") else "")


def print_table(rows, markdown):
    head = ["costs", "P", "M", "placement", "budget (ranks' shares)", "library best",
            "synth", "bound", "gap", "time s", "verdict", "library best, any placement"]
    lines = []
    for r in rows:
        synth = fmt(r["makespan"]) if "makespan" in r else "—"
        bound = fmt(r["bound"]) if "bound" in r else "—"
        gap = (f"{100 * (r['makespan'] - r['bound']) / r['bound']:.1f}%"
               if "makespan" in r and r["bound"] > 0 else "—")
        secs = f"{r['seconds']:.2f}" if "seconds" in r else "—"
        budget = f"{r['budget']} ({fmt(r['rank_shares'])})"
        lines.append([r["costs"], str(r["P"]), str(r["M"]), r["placement"], budget,
                      f"{fmt(r['library_makespan'])} {r['library']}", synth, bound, gap, secs,
                      verdict(r), f"{fmt(r['any_library_makespan'])} {r['any_library']}"])
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for line in lines:
            print("| " + " | ".join(line) + " |")
        return
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h)
              for i, h in enumerate(head)]
    for line in [head] + lines:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())


def parse_sizes(text):
    sizes = []
    for item in text.split(","):
        p, m = item.split(":")
        sizes.append((int(p), int(m)))
    return sizes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pipec")
    parser.add_argument("--time", type=float, default=10, help="synth's --time per search")
    parser.add_argument("--sizes", type=parse_sizes,
                        default=[(p, k * p) for p in (4, 8, 16) for k in (2, 4, 8)],
                        help="P:M pairs, comma-separated (default P in 4,8,16, M in 2P,4P,8P)")
    parser.add_argument("--costs", default="base,hidden,w05,dsv3",
                        help="cost sets, comma-separated: base, hidden, w05, dsv3")
    parser.add_argument("--markdown", action="store_true", help="a markdown table")
    parser.add_argument("--json", help="also write the rows as JSON")
    parser.add_argument("--keep", help="keep the synthesized schedules in this folder")
    args = parser.parse_args()
    names = args.costs.split(",")
    unknown = set(names) - {"base", "hidden", "w05", "dsv3"}
    if unknown:
        parser.error(f"unknown cost sets: {', '.join(sorted(unknown))}")
    sets = cost_sets(args.pipec, names)
    keep = args.keep or tempfile.mkdtemp(prefix="synth_table.")
    os.makedirs(keep, exist_ok=True)
    rows = []
    for cost_name, costs in sets.items():
        for p, m in args.sizes:
            rows += rows_for(args.pipec, cost_name, costs, p, m, args.time, keep)
            print(f"done: {cost_name} P={p} M={m}", file=sys.stderr, flush=True)
    print_table(rows, args.markdown)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"cost_sets": sets, "rows": rows}, out, indent=1)


if __name__ == "__main__":
    main()
