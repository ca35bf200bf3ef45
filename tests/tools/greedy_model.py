#!/usr/bin/env python3
"""An independent model of greedy rank programs (`rank r greedy limit E { }`).

It re-implements, in plain Python and without any code shared with pipec, the
list scheduling the elaborator runs (compiler/elab/GreedyScheduler.cpp), for
the V placement of examples/vhalf_greedy.pipe and vmin_greedy.pipe (chunk 0 of
rank r holds stage r, chunk 1 stage 2P-1-r) and the one-chunk placement of
tests/lit/syntax/greedy.pipe, with every op of equal cost (the files' default
costs, F = I = W = half of B). At each time, every idle rank in ascending order
runs the first entry whose op is ready (F after the previous stage's F; I or B
after its F and the next stage's backward; W after its I), whose guard holds
and, for F, that keeps live activations (F's whose B or W has not run) within
the limit. Ops end one time unit later (two for B), times the micro-batch's size
where the file declares sizes. A dependency on another rank arrives `lat` plus
`bt` times the micro-batch's size after it ends (the file's p2p, and its
activation_bytes over bandwidth: size scales the bytes, not the latency).

  compare PIPEC EXAMPLES   for each (rule, P, M) of a grid, the per-rank order
                           of `pipec emit --target ir` against this model's;
                           prints one line per case and a summary
"""
import os
import subprocess
import sys


def v_stage(P, r, c):
    return r if c == 0 else 2 * P - 1 - r


def schedule(P, M, chunks, limit, entries, size=lambda mb: 1, lat=0.0, bt=0.0):
    """entries: list of (kind, chunk, guard(state) or None); kinds F, B, I, W."""
    S = P * chunks
    stage = (lambda r, c: v_stage(P, r, c)) if chunks == 2 else (lambda r, c: r)
    rank_of = {stage(r, c): r for r in range(P) for c in range(chunks)}
    endF, endBack = {}, {}
    nextF = [[0] * chunks for _ in range(P)]
    nextBack = [[0] * chunks for _ in range(P)]
    owedW = [[] for _ in range(P)]  # (sequence, chunk, mb) of I's whose W has not run
    seq = 0
    busy = [0.0] * P
    order = [[] for _ in range(P)]
    time, events, remaining = 0.0, set(), P * chunks * M * 2

    def sent(end, src, dst, mb):
        if end is None or rank_of[src] == rank_of[dst]:
            return end
        return end + lat + bt * size(mb)

    def ready_at(kind, s, mb):
        deps = []
        if kind == "F":
            if s > 0:
                deps.append(sent(endF.get((s - 1, mb)), s - 1, s, mb))
        elif kind == "W":
            deps.append(endBack.get((s, mb)))
        else:
            deps.append(endF.get((s, mb)))
            if s + 1 < S:
                deps.append(sent(endBack.get((s + 1, mb)), s + 1, s, mb))
        if any(d is None for d in deps):
            return None
        return max(deps, default=0.0)

    while True:
        picked = True
        while picked:
            picked = False
            for r in range(P):
                if busy[r] > time:
                    continue
                state = {
                    "r": r, "P": P,
                    "pendingB": [nextF[r][c] - nextBack[r][c] for c in range(chunks)],
                    "pendingW": [sum(1 for _, cc, _ in owedW[r] if cc == c) for c in range(chunks)],
                }
                live = sum(state["pendingB"]) + sum(state["pendingW"])
                for kind, c, guard in entries:
                    if guard and not guard(state):
                        continue
                    if kind == "W":
                        cands = [w for w in owedW[r] if c is None or w[1] == c]
                        if not cands:
                            continue
                        w = min(cands)
                        cc, mb = w[1], w[2]
                    else:
                        cc = c
                        mb = nextF[r][cc] if kind == "F" else nextBack[r][cc]
                        if mb >= M:
                            continue
                    s = stage(r, cc)
                    t = ready_at(kind, s, mb)
                    if t is None or t > time:
                        continue
                    if kind == "F" and limit is not None and live + 1 > limit(state):
                        continue
                    end = time + (2 if kind == "B" else 1) * size(mb)
                    if kind == "F":
                        endF[(s, mb)] = end
                        nextF[r][cc] += 1
                    elif kind == "W":
                        owedW[r].remove(w)
                    else:
                        endBack[(s, mb)] = end
                        nextBack[r][cc] += 1
                        remaining -= 1
                        if kind == "I":
                            owedW[r].append((seq, cc, mb))
                            seq += 1
                    if kind == "F":
                        remaining -= 1
                    busy[r] = end
                    events.add(end)
                    if lat + bt > 0:
                        events.add(end + lat + bt * size(mb))
                    order[r].append(f"{kind}{cc}.{mb}")
                    picked = True
                    break
        later = [e for e in events if e > time]
        if not later:
            break
        time = min(later)
    done = remaining == 0 and not any(owedW)
    return order if done else None


def rules(P):
    """The rules of the files the test compares, as (file, chunks, limit, entries[, timing])."""
    g_half = 3 if P % 2 == 0 else 0
    g_min = 2 if P % 3 == 0 else 0
    return {
        "examples/vhalf_greedy.pipe": (2, lambda s: 2 * ((P + 2) // 2), [
            ("I", 1, None), ("I", 0, None), ("F", 1, None),
            ("F", 0, lambda s: s["pendingB"][0] + s["pendingW"][0] < P),
            ("W", 0, None), ("W", 1, None)]),
        "examples/vmin_greedy.pipe": (2, lambda s: 2 * ((P + 4) // 3), [
            ("I", 1, None), ("I", 0, None),
            ("F", 1, lambda s: s["pendingB"][1] < (2 * s["r"] + g_min + 7) // 6),
            ("F", 0, lambda s: s["pendingB"][0] < (4 * P + g_min - 2 * s["r"] + 5) // 6),
            ("W", 1, None), ("W", 0, None)]),
        "tests/lit/syntax/greedy.pipe": (1, lambda s: P - s["r"], [
            ("B", 0, None), ("F", 0, None)]),
        # sizes i % 3 == 2 ? 1 : 2; p2p 0.25; 3 bytes over bandwidth 2 per unit.
        "tests/lit/library/Inputs/greedy_sizes.pipe": (1, lambda s: P - s["r"] + 1, [
            ("I", 0, None), ("F", 0, None), ("W", 0, None)],
            dict(size=lambda mb: 1 if mb % 3 == 2 else 2, lat=0.25, bt=1.5)),
    }


def main(argv):
    if len(argv) != 3 or argv[0] != "compare":
        print(__doc__)
        return 2
    pipec, root = argv[1], argv[2]
    same = differ = 0
    for P, M in [(2, 1), (2, 5), (3, 3), (3, 7), (4, 4), (4, 9), (5, 6), (6, 13), (7, 7), (8, 16)]:
        for path, (chunks, limit, entries, *timing) in rules(P).items():
            if chunks == 1 and M < P:
                continue
            model = schedule(P, M, chunks, limit, entries, **(timing[0] if timing else {}))
            out = subprocess.run([pipec, "emit", "--target", "ir", "-D", f"P={P}", "-D", f"M={M}",
                                  os.path.join(root, path)], capture_output=True, text=True)
            ours = [line.split(": ", 1)[1].split() for line in out.stdout.splitlines()
                    if line.startswith("rank ")] if out.returncode == 0 else None
            ok = model is not None and ours == model
            same += ok
            differ += not ok
            print(f"{os.path.basename(path)} P={P} M={M}: {'same order' if ok else 'DIFFERENT'}")
    print(f"{same} cases the same, {differ} different")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
