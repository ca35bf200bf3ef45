#!/usr/bin/env python3
"""An independent model of BitPipe's order generator (Wu, Chen and Yu,
"BitPipe: Bidirectional Interleaved Pipeline Parallelism for Accelerating
Large Models Training", 2024, arXiv:2410.19367; the authors' code is
megatron/core/pipeline_parallel/bitpipe_schedule.py in wuhouming/BitPipe).

The authors' runtime drives each rank through a list of "virtual micro-batch"
ids: 2M of them (M micro-batches, each passing two of the rank's four model
chunks). An id names its chunk (the id's position in a group of P picks the
first or second half of the rank's pipelines, and ids of the second half of
the list belong to the second model chunks 2 and 3); each chunk takes its ids
in increasing order, so the k-th id of chunk c is micro-batch k of c's
pipeline. Per rank the runtime builds a forward list and a backward list of
ids (blocks of 2P, one per P micro-batches) and walks them as: a warm-up of
forwards, then per further block one-forward-one-backward, a run of
backwards, one-forward-one-backward again and a run of forwards (the
"direct concatenation" of basic units), then a last one-forward-one-backward
run and the cool-down backwards.

This file re-derives that walk from the ids (no code shared with the authors
or with examples/bitpipe.pipe, which writes the chunk sequence in closed
form) and prints, per rank, the order as `pipec emit --target ir` prints it:
`F<chunk>.<k>` / `B<chunk>.<k>`, k the micro-batch's index within its flow
(chunks 0 and 2 carry the down pipeline, micro-batches 0..M/2; chunks 1 and 3
the up pipeline, M/2..M).

Subcommand:
  ir P M          the order, one line per rank
"""
import sys


def chunk_of(i, P, total):
    """Model chunk of virtual micro-batch id i (the authors' rule)."""
    c = (i % P) // (P // 2)
    return c + (2 if i >= total // 2 else 0)


def ids_per_chunk(P, total):
    per = [[] for _ in range(4)]
    for i in range(total):
        per[chunk_of(i, P, total)].append(i)
    return per


def lists(P, M, r):
    """The rank's forward and backward id lists."""
    total = 2 * M
    per = ids_per_chunk(P, total)
    u = P // 2
    h = r // u
    n = u - r if r < u else r - u + 1
    fwd, bwd = [], []
    # The forward and backward blocks visit the chunks in mirrored roles: the
    # backward list runs the second chunks where the forward runs the first.
    for j in range(total // P // 2):
        b = j * u

        def block(out, a, bb, c, d):
            for i in range(n):
                out.append(per[a][b + i])
            for i in range(u - n):
                out.append(per[bb][b + i])
                out.append(per[a][b + i + n])
            for i in range(n):
                out.append(per[bb][b + i + u - n])
                out.append(per[c][b + i])
            for i in range(u - n):
                out.append(per[d][b + i])
                out.append(per[c][b + i + n])
            for i in range(n):
                out.append(per[d][b + i + u - n])

        block(fwd, h, 1 - h, 3 - h, 2 + h)
        block(bwd, 2 + h, 3 - h, 1 - h, h)
    return fwd, bwd


def walk(P, M, r):
    """The runtime's walk over the two lists: a list of ('F'|'B', id)."""
    fwd, bwd = lists(P, M, r)
    total = 2 * M
    warm = P + P // 2 + (r if r < P // 2 else P - 1 - r)
    unit = 2 * P - warm
    loops = total // P // 2 - 1
    out = [("F", fwd[k]) for k in range(warm)]
    for j in range(loops):
        o = j * 2 * P
        for k in range(2 * unit):
            out.append(("F", fwd[k // 2 + warm + o]) if k % 2 == 0 else ("B", bwd[k // 2 + o]))
        for k in range(warm - unit + 1):
            out.append(("B", bwd[k + o + unit]))
        for k in range(2 * (unit - 1)):
            out.append(("F", fwd[k // 2 + 2 * P + o]) if k % 2 == 0
                       else ("B", bwd[k // 2 + warm + 1 + o]))
        for k in range(warm - unit + 1):
            out.append(("F", fwd[k + 2 * P + o + unit - 1]))
    mid = loops * 2 * P
    for k in range(2 * unit):
        out.append(("F", fwd[k // 2 + warm + mid]) if k % 2 == 0 else ("B", bwd[k // 2 + mid]))
    for k in range(mid + unit, total):
        out.append(("B", bwd[k]))
    return out


def ir(P, M):
    total = 2 * M
    per = ids_per_chunk(P, total)
    index = {i: (c, k) for c in range(4) for k, i in enumerate(per[c])}
    lines = []
    for r in range(P):
        ops = walk(P, M, r)
        assert len(ops) == 2 * total, (P, M, r, len(ops))
        lines.append(f"rank {r}: " + " ".join(f"{t}{index[i][0]}.{index[i][1]}" for t, i in ops))
    return "\n".join(lines)


def main(argv):
    if len(argv) != 3 or argv[0] != "ir":
        sys.stderr.write("usage: bitpipe_model.py ir P M\n")
        return 2
    P, M = int(argv[1]), int(argv[2])
    if P < 2 or P % 2 or M < P or M % P:
        sys.stderr.write("BitPipe needs an even P >= 2 and M a positive multiple of P\n")
        return 2
    print(ir(P, M))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
