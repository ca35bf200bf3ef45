#!/usr/bin/env python3
"""Writes PyTorch-style compute-only CSVs that stress `pipec import`.

usage: make_csv.py KIND ARG OUT
  runs N     a GPipe-like schedule (M=2) whose stages are placed on 8 ranks in
             N runs of consecutive stages, the ranks in a fixed pseudo-random
             order: a placement with no closed form
  scatter N  N stages on 1000 ranks in a pseudo-random order, M=1: too
             irregular for any place statement
  rows N     N rows: one op pair on rank 0, the rest idle (N ranks)
  distinct N N ranks, stage r on rank r, M=7, each rank's forwards and then
             backwards from micro-batch r*r % 7 on: no three neighbouring
             ranks share a program shape (r*r % 7 is affine on no three)
Deterministic: a fixed linear congruential generator, no randomness source.
"""
import sys


def lcg(seed):
    while True:
        seed = (seed * 6364136223846793005 + 1442695040888963407) % 2**64
        yield seed >> 33


def gpipe(rank_of, ranks, microbatches):
    """Every rank runs its stages' forwards in stage order, then their
    backwards in reverse, one micro-batch after another: a valid schedule
    whatever the placement."""
    stages = len(rank_of)
    rows = [[] for _ in range(ranks)]
    for m in range(microbatches):
        for s in range(stages):
            rows[rank_of[s]].append(f"{s}F{m}")
    for m in range(microbatches):
        for s in reversed(range(stages)):
            rows[rank_of[s]].append(f"{s}B{m}")
    return "\n".join(",".join(row) for row in rows) + "\n"


def main(kind, arg, out):
    n = int(arg)
    rand = lcg(12345)
    if kind == "runs":
        rank_of, previous = [], -1
        for _ in range(n):
            rank = next(rand) % 8
            if rank == previous:
                rank = (rank + 1) % 8
            rank_of += [rank] * (1 + next(rand) % 2)
            previous = rank
        text = gpipe(rank_of, 8, 2)
    elif kind == "scatter":
        text = gpipe([next(rand) % 1000 for _ in range(n)], 1000, 1)
    elif kind == "rows":
        # Idle ranks as blank lines, the last as an empty cell: a blank line
        # at the end would be refused (CsvTrailingBlankLine).
        text = "0F0,0B0\n" + "\n" * (n - 2) + ",\n" if n > 1 else "0F0,0B0\n"
    elif kind == "distinct":
        rows = []
        for r in range(n):
            order = [(r * r + k) % 7 for k in range(7)]
            rows.append(",".join([f"{r}F{m}" for m in order] + [f"{r}B{m}" for m in order]))
        text = "\n".join(rows) + "\n"
    else:
        sys.exit(f"unknown kind {kind}")
    with open(out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main(*sys.argv[1:])
