#!/usr/bin/env python3
"""An independent model of Hanayo's wave timeline (Liu, Cheng, Zhou and You,
SC'23, arXiv:2308.15762, §3), for examples/hanayo.pipe.

It lays the timeline out as the paper draws it, in slots of one chunk op:
W waves of 2P stages over P ranks (stage s on rank s mod P going down for
even s / P, P-1 - s mod P going back up for odd), micro-batches entering two
slots apart in groups of P, a group every 4WP slots, each micro-batch's
forward wave reaching stage s one slot after stage s-1 and its backward wave
returning one slot per stage after the last forward. It then reads each
rank's order off the slots, asserting on the way what the example's comments
claim: no rank ever has two ops in one slot, and every rank idles 2(P-1)
slots of the whole timeline (the fill and drain), whatever M and W.

Subcommand:
  ir P M WAVES    the order as `pipec emit --target ir` prints it, one line per rank
"""
import sys


def timeline(P, M, waves):
    S = 2 * waves * P                 # stages
    T = 2 * S                         # slots between groups
    slots = [dict() for _ in range(P)]
    for m in range(M):
        g, k = divmod(m, P)
        entry = g * T + 2 * k
        for s in range(S):
            chunk = s // P
            rank = s % P if chunk % 2 == 0 else P - 1 - s % P
            for kind, t in (("F", entry + s), ("B", entry + 2 * S - 1 - s)):
                assert t not in slots[rank], f"two ops at slot {t} on rank {rank}"
                slots[rank][t] = f"{kind}{chunk}.{m}"
    makespan = max(max(x) for x in slots) + 1
    assert all(makespan - len(x) == 2 * (P - 1) for x in slots), "bubble is not 2(P-1) slots"
    return [[x[t] for t in sorted(x)] for x in slots]


def main(argv):
    if len(argv) != 4 or argv[0] != "ir":
        sys.stderr.write("usage: hanayo_model.py ir P M WAVES\n")
        return 2
    P, M, waves = map(int, argv[1:])
    if P < 2 or waves < 1 or M < P or M % P:
        sys.stderr.write("Hanayo needs P >= 2, WAVES >= 1 and M a positive multiple of P\n")
        return 2
    for r, ops in enumerate(timeline(P, M, waves)):
        print(f"rank {r}: " + " ".join(ops))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
