#!/usr/bin/env python3
"""An independent model of `squeeze;` (compiler/elab/Squeeze.cpp).

It re-implements the pass in plain Python, without code shared with pipec, for
the V placement of examples/vhalf.pipe and vmin.pipe (chunk 0 of rank r holds
stage r, chunk 1 stage 2P-1-r), and checks pipec's order against it:

  1. Time each rank's written order in unit slots, every op as early as its
     dependencies (F after the previous stage's F; I after its F and the next
     stage's I; W after its I) and its rank allow.
  2. Take the W's out. In (slot, rank) order, move each F and I to the
     earliest free slot of its rank after its dependencies' new slots (and
     after the previous op of the same stage and kind), if the rank's live
     activations never exceed the limit, counting with the W's run in free
     slots, the oldest owed first. The limit is the written order's highest
     peak over all ranks (F +1, W -1).
  3. Put the W's in the free slots (oldest owed first), the rest at the end.

  compare PIPEC EXAMPLES   for each (file, P, M) of a grid: the input order is
                           `pipec emit --target ir` of the file with its
                           `squeeze;` line removed; prints whether pipec's
                           squeezed order equals this model's, and a summary;
                           `--mutate` drops the memory check (the test shows
                           that the comparison can fail)
"""
import os
import subprocess
import sys
import tempfile


def read_orders(text):
    orders = []
    for line in text.splitlines():
        if not line.startswith("rank "):
            continue
        ops = []
        for tok in line.split(": ", 1)[1].split():
            chunk, mb = tok[1:].split(".")
            ops.append((tok[0], int(chunk), int(mb)))
        orders.append(ops)
    return orders


def stage_of(P, r, c):
    return r if c == 0 else 2 * P - 1 - r


def time_orders(P, orders):
    """Unit-slot start of every op of the written orders (step 1)."""
    S = 2 * P
    done = {}  # (kind class, stage, mb) -> end slot
    slots = [[None] * len(o) for o in orders]
    pos = [0] * P
    free = [0] * P
    progress = True
    while progress:
        progress = False
        for r in range(P):
            while pos[r] < len(orders[r]):
                k, c, mb = orders[r][pos[r]]
                s = stage_of(P, r, c)
                if k == "F":
                    deps = [("F", s - 1, mb)] if s > 0 else []
                elif k == "W":
                    deps = [("I", s, mb)]
                else:
                    deps = [("F", s, mb)] + ([("I", s + 1, mb)] if s + 1 < S else [])
                if any(d not in done for d in deps):
                    break
                t = max([free[r]] + [done[d] for d in deps])
                slots[r][pos[r]] = t
                free[r] = t + 1
                if k != "W":
                    done[(k, s, mb)] = t + 1
                pos[r] += 1
                progress = True
    assert all(pos[r] == len(orders[r]) for r in range(P)), "the written order cannot run"
    return slots


def written_peak(orders):
    best = 0
    for ops in orders:
        live = 0
        for k, _, _ in ops:
            live += {"F": 1, "I": 0}.get(k, -1)
            best = max(best, live)
    return best


def live_profile(cells):
    """Live count after each slot; cells[x] is 'F', 'I' or None (free)."""
    live = owed = 0
    out = []
    for k in cells:
        if k == "F":
            live += 1
        elif k == "I":
            owed += 1
        elif owed:
            owed -= 1
            live -= 1
        out.append(live)
    return out


def squeeze(P, orders, check_memory=True):
    S = 2 * P
    limit = written_peak(orders)
    slots = time_orders(P, orders)
    cells, ops = [], []
    for r in range(P):
        kept = [(slots[r][i], op) for i, op in enumerate(orders[r]) if op[0] != "W"]
        width = max((t for t, _ in kept), default=-1) + 1
        row = [None] * width
        for t, op in kept:
            row[t] = op
        cells.append(row)
        ops += [(t, r, op) for t, op in kept]
    new = {}
    for t, r, (k, c, mb) in sorted(ops):
        s = stage_of(P, r, c)
        deps = [(k, s, mb - 1)]
        if k == "F":
            deps.append(("F", s - 1, mb))
        else:
            deps += [("F", s, mb), ("I", s + 1, mb)]
        earliest = max([new[d] for d in deps if d in new], default=-1) + 1
        row = cells[r]
        for x in range(earliest, t):
            if row[x] is not None:
                continue
            row[x], row[t] = row[t], None
            if not check_memory or max(live_profile([q and q[0] for q in row]), default=0) <= limit:
                break
            row[t], row[x] = row[x], None
        new[(k, s, mb)] = row.index((k, c, mb))
    result = []
    for r in range(P):
        out, owed = [], []
        for op in cells[r]:
            if op is None:
                if owed:
                    out.append(owed.pop(0))
                continue
            out.append(op)
            if op[0] == "I":
                owed.append(("W", op[1], op[2]))
        result.append(out + owed)
    return result


def emit(pipec, path, P, M):
    out = subprocess.run([pipec, "emit", "--target", "ir", "-D", f"P={P}", "-D", f"M={M}", path],
                         capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr)
    return read_orders(out.stdout)


def main(argv):
    if len(argv) < 3 or argv[0] != "compare":
        print(__doc__)
        return 2
    pipec, root = argv[1], os.path.abspath(argv[2])
    mutate = "--mutate" in argv[3:]
    same = differ = 0
    for name in ("vhalf", "vmin"):
        path = os.path.join(root, "examples", name + ".pipe")
        with open(path) as f:
            text = f.read()
        assert "  squeeze;\n" in text, path + " has no 'squeeze;' line"
        with tempfile.TemporaryDirectory() as tmp:
            os.symlink(os.path.join(root, "examples", "include"), os.path.join(tmp, "include"))
            plain = os.path.join(tmp, name + ".pipe")
            with open(plain, "w") as f:
                f.write(text.replace("  squeeze;\n", ""))
            for P, M in [(2, 1), (2, 5), (3, 3), (3, 8), (4, 4), (4, 9), (5, 7), (6, 6), (6, 13),
                         (7, 10), (8, 8), (8, 17), (9, 12), (12, 24)]:
                model = squeeze(P, emit(pipec, plain, P, M), check_memory=not mutate)
                ours = emit(pipec, path, P, M)
                ok = model == ours
                same += ok
                differ += not ok
                print(f"{name} P={P} M={M}: {'same order' if ok else 'DIFFERENT'}")
    print(f"{same} cases the same, {differ} different")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
