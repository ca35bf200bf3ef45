#!/usr/bin/env python3
"""An independent model of the V-Half and V-Min generator of Qi et al.

"Pipeline Parallelism with Controllable Memory" (Qi, Wan, Huang, Lin; NeurIPS
2024, arXiv:2405.15362) builds V-Half and V-Min from a repeating building
block and then improves it greedily. The authors' generator is
megatron/core/pipeline_parallel/zerobubble/scheduler/zbv_greedy.py in
sail-sg/zero-bubble-pipeline-parallelism. This file re-derives it in plain
Python (no code shared with pipec or the authors) so examples/vhalf.pipe and
examples/vmin.pipe can be compared with what the authors run:

  1. The building block. Rank r of P runs, every 6 slots, the forward of chunk 0
     (F), the forward of chunk 1 (f), the input gradient of chunk 1 (B) and of
     chunk 0 (b) of one micro-batch, at fixed offsets (V-Min: r, 2P-1-r,
     2P+g+r, 4P+g-1-r with g = 2 when 3 divides P; V-Half: 2r, 3P-2-r,
     3P+g+2r-1, 6P+g-2-r with g = 3 when P is even).
  2. "W in the first free slot while any is pending" (put_w).
  3. The squeeze: in time order, an op moves to the earliest free slot after
     its dependencies if that does not raise the rank's peak memory (counted
     as +1 for F and f, -1 for W, in chunk units), except in the steady phase
     between the first b on rank 0 and the last F. Done once with W placed,
     once without (W then placed again), each time re-timed eagerly with unit
     costs.
  4. W split per chunk (put_w again), the final order read off in time order.

Ops are printed as pipec ops: F -> F(0), f -> F(1), B -> I(1), b -> I(0), and
the W's of chunk 1 and chunk 0 -> W(1), W(0), each with its micro-batch.

Subcommands:
  pipe KIND P M          a .pipe file with one explicit program per rank
  compare PIPEC EXAMPLES for each (P, M) of a grid, `pipec sim` makespan and
                         `pipec check --explain` peak of the example against
                         the generator's order, side by side; with
                         --require-parity, exits 1 when the example is longer
                         than the generator, or its peak higher, at any size
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

# Op types, in the authors' numbering: 0 F, 1 f, 2 B, 3 b, then W's.
PIPEC_OP = ["F(0, mb = {})", "F(1, mb = {})", "I(1, mb = {})", "I(0, mb = {})"]


def block(kind, P):
    """Slot of micro-batch 0's F, f, B, b on each rank (step 1)."""
    rows = []
    for r in range(P):
        if kind == "vmin":
            g = 2 if P % 3 == 0 else 0
            rows.append([r, 2 * P - 1 - r, 2 * P + g + r, 4 * P + g - 1 - r])
        else:
            g = 3 if P % 2 == 0 else 0
            rows.append([2 * r, 3 * P - 2 - r, 3 * P + g + 2 * r - 1, 6 * P + g - 2 - r])
    return rows


def merged(rank_lists):
    """(slot, type, mb) of one rank's lists, in slot order."""
    return sorted((t, k, mb) for k, lst in enumerate(rank_lists) for mb, t in enumerate(lst))


def place_w(rank_lists, per_chunk):
    """Step 2: on every slot no op holds, run a W if one is owed; the rest after."""
    lists = [list(x) for x in rank_lists[:4]]
    ws = [[], []]
    busy = {t for lst in lists for t in lst}
    owed = [0, 0]
    end = max(max(lst) for lst in lists)
    ends = sorted(t for k in (2, 3) for t in lists[k])
    kind_at = {t: k for k in range(4) for t in lists[k]}
    slot = 0
    while slot <= end or owed[0] or owed[1]:
        if slot in busy:
            k = kind_at[slot]
            if k >= 2:
                owed[k - 2 if per_chunk else 0] += 1
        else:
            for w in range(2):
                if owed[w]:
                    ws[w].append(slot)
                    owed[w] -= 1
                    break
        slot += 1
    return lists + (ws if per_chunk else [ws[0]])


def peak(rank_lists):
    """Peak activations of one rank (chunk units); without W lists, W's run in
    free slots as place_w would put them."""
    with_w = len(rank_lists) > 4
    cur = best = owed = 0
    ops = {t: k for k, lst in enumerate(rank_lists) for t in lst}
    end = max(ops)
    for slot in range(end + 1):
        k = ops.get(slot)
        if k is None:
            if not with_w and owed:
                owed -= 1
                cur -= 1
        elif k < 2:
            cur += 1
        elif k < 4:
            owed += 1
        else:
            cur -= 1
        best = max(best, cur)
    return best


def predecessors(stage, k, mb, P, lists):
    """Slots of the ops (stage, k, mb) waits for, in `lists` (slot per op)."""
    out = []
    if k in (0, 2) and stage > 0:
        out.append(lists[stage - 1][k][mb])
    if k in (1, 3) and stage + 1 < P:
        out.append(lists[stage + 1][k][mb])
    if 0 < k < 4:
        out.append(lists[stage][k - 1][mb])
    if k == 4:
        out.append(sorted(lists[stage][2] + lists[stage][3])[mb])
    if mb > 0:
        out.append(lists[stage][k][mb - 1])
    return out


def global_order(lists):
    P = len(lists)
    return sorted((t, s, k, mb) for s in range(P) for k, lst in enumerate(lists[s])
                  for mb, t in enumerate(lst))


def eager(lists, cost, comm):
    """Re-time every op as early as its dependencies and its rank allow, the
    ranks keeping their slot order; returns start slots and per-rank orders."""
    P = len(lists)
    end = {}
    last = [None] * P
    order = [[] for _ in range(P)]
    for _, s, k, mb in global_order(lists):
        ready = 0
        if k in (0, 2) and s > 0:
            ready = max(ready, end[(s - 1, k, mb)] + comm)
        if k in (1, 3) and s + 1 < P:
            ready = max(ready, end[(s + 1, k, mb)] + comm)
        if 0 < k < 4:
            ready = max(ready, end[(s, k - 1, mb)])
        if mb > 0:
            ready = max(ready, end[(s, k, mb - 1)])
        if last[s] is not None:
            ready = max(ready, end[last[s]])
        end[(s, k, mb)] = ready + cost[k]
        last[s] = (s, k, mb)
        order[s].append((k, mb))
    starts = [[[end[(s, k, mb)] - cost[k] for mb in range(len(lst))]
               for k, lst in enumerate(lists[s])] for s in range(P)]
    return starts, order


def squeeze(lists, with_w):
    """Step 3, one pass."""
    if with_w:
        lists = [place_w(x, False) for x in lists]
    lists = [[list(x) for x in rank] for rank in lists]
    P = len(lists)
    limit = max(peak(x) for x in lists)
    last_f = len(lists[0][0]) - 1
    taken = [set() for _ in range(P)]
    phase = 0
    for t, s, k, mb in global_order(lists):
        if k == 3 and s == 0 and phase == 0:
            phase = 1
        if phase == 1:
            if k == 0 and mb == last_f:
                phase = 2
            taken[s].add(lists[s][k][mb])
            continue
        if phase == 0 and not with_w:
            taken[s].add(lists[s][k][mb])
            continue
        earliest = max(predecessors(s, k, mb, P, lists), default=-1) + 1
        for slot in range(earliest, t):
            if slot in taken[s]:
                continue
            lists[s][k][mb] = slot
            if peak(lists[s]) <= limit:
                break
        else:
            lists[s][k][mb] = t
        taken[s].add(lists[s][k][mb])
    if not with_w:
        lists = [place_w(x, False) for x in lists]
    return eager(lists, [1] * 5, 0)[0]


def generate(kind, P, M):
    lists = [[list(range(t, t + 6 * M, 6)) for t in row] for row in block(kind, P)]
    lists = squeeze(lists, True)
    lists = squeeze([x[:4] for x in lists], False)
    lists = [place_w(x[:4], True) for x in lists]
    return eager(lists, [1] * 6, 0)[1]


def pipe_text(kind, P, M):
    order = generate(kind, P, M)
    out = [f"// {kind} at P={P}, M={M}: the order of the authors' generator (tests/tools/vshape_model.py)",
           f"schedule {kind}_generator(P = {P}, M = {M}) {{",
           "  ranks P;", "  stages 2 * P;", "  microbatches M;",
           "  place stage s -> rank s < P ? s : 2 * P - 1 - s chunk s < P ? 0 : 1;"]
    for r, ops in enumerate(order):
        text = []
        for k, mb in ops:
            text.append((PIPEC_OP[k] if k < 4 else ("W(1, mb = {})" if k == 4 else "W(0, mb = {})")).format(mb) + ";")
        out.append(f"  rank {r} {{ " + " ".join(text) + " }")
    out.append("}")
    return "\n".join(out) + "\n"


COSTS = ["--cost", "F=0.5", "--cost", "B=1", "--cost", "I=0.5", "--cost", "W=0.5"]


def measure(pipec, path, defines):
    sim = subprocess.run([pipec, "sim", path] + defines + COSTS, capture_output=True, text=True)
    chk = subprocess.run([pipec, "check", "--explain", path] + defines, capture_output=True, text=True)
    if sim.returncode or chk.returncode:
        raise RuntimeError(f"{path} {defines}: {sim.stderr}{chk.stderr}")
    m = re.search(r"makespan[:= ]+([0-9.]+)", sim.stdout)
    peaks = [int(x) for x in re.findall(r"peak activations (\d+)", chk.stdout)]
    return float(m.group(1)), max(peaks)


def cmd_compare(pipec, examples, grid, suffix="", require_parity=False):
    """Prints one line per case and a summary per schedule; the lit test holds
    the lines as golden values, so any change in either order shows. With a
    suffix, compares examples/KIND<suffix>.pipe (`_greedy`: the greedy rank
    programs) instead. With require_parity, returns 1 (after printing every
    line) if some case is longer than the generator or its peak is higher."""
    failures = []
    for kind in ("vhalf", "vmin"):
        better = tied = worse = higher = 0
        for P, M in grid:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "gen.pipe")
                with open(path, "w") as f:
                    f.write(pipe_text(kind, P, M))
                gen = measure(pipec, path, [])
            ours = measure(pipec, os.path.join(examples, kind + suffix + ".pipe"), ["-D", f"P={P}", "-D", f"M={M}"])
            diff = ours[0] - gen[0]
            better += diff < -1e-9
            tied += abs(diff) <= 1e-9
            worse += diff > 1e-9
            higher += ours[1] > gen[1]
            if diff > 1e-9 or ours[1] > gen[1]:
                failures.append(f"{kind}{suffix} P={P} M={M}")
            print(f"{kind}{suffix} P={P} M={M}: makespan {ours[0]:g} (generator {gen[0]:g}, {diff:+g}), "
                  f"peak {ours[1]} (generator {gen[1]})")
        print(f"{kind}{suffix}: {len(grid)} cases: {better} shorter, {tied} equal, {worse} longer; "
              f"peak above the generator's in {higher}")
    if require_parity:
        if failures:
            print("PARITY FAILED (longer than the generator, or a higher peak): " + ", ".join(failures))
            return 1
        print("parity: equal to or shorter than the generator at equal or lower peak, every size")
    return 0


def main(argv):
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pipe")
    p.add_argument("kind", choices=["vhalf", "vmin"])
    p.add_argument("P", type=int)
    p.add_argument("M", type=int)
    c = sub.add_parser("compare")
    c.add_argument("pipec")
    c.add_argument("examples")
    c.add_argument("--suffix", default="", help="compare examples/KIND<SUFFIX>.pipe")
    c.add_argument("--require-parity", action="store_true",
                   help="exit 1 if any size is longer than the generator or peaks higher")
    args = ap.parse_args(argv)
    if args.cmd == "pipe":
        sys.stdout.write(pipe_text(args.kind, args.P, args.M))
        return 0
    grid = [(P, M) for P in (2, 3, 4, 6, 8) for M in sorted({P, 2 * P, 32})]
    grid += [(P, M) for P in (12, 16) for M in (P, 2 * P, 4 * P)]
    return cmd_compare(args.pipec, args.examples, grid, args.suffix, args.require_parity)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
