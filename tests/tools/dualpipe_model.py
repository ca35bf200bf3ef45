#!/usr/bin/env python3
"""An independent model of DeepSeek's DualPipe and DualPipeV op orders.

It is the oracle for examples/dualpipe.pipe and examples/dualpipev.pipe: it
re-derives, in plain Python, the per-rank compute order that DeepSeek's
reference step() loops (github.com/deepseek-ai/DualPipe, dualpipe/dualpipe.py
and dualpipe/dualpipev.py) execute, and prints it in the notation of
`pipec emit --target ir`:

    rank 0: F0.0 F0.1 ... FB(F0.3|B1.1) ... I0.3 W0.3

The digit before the dot is the chunk (for DualPipe also the flow: 0 = "down",
entering at rank 0, 1 = "up", entering at rank P-1), the number after it the
micro-batch index within the flow. The model keeps its own micro-batch counters
and its own first-in-first-out queue of deferred weight halves; it shares no
code with pipec. It also replays the order it produces against the data
dependencies of the pipeline, so an order that could not run is an error.

Subcommands:
  emit KIND P M             print the order (KIND is dualpipe or dualpipev)
  torch P M                 DualPipeV in PyTorch's pipeline_order notation
  from-torch FILE           convert a PyTorch DualPipeV trace to the ir notation
  compare PIPEC EXAMPLES    compare `pipec emit --target ir` with the model on the grid
  check PIPEC EXAMPLES      run `pipec check` on the grid; it must print nothing
"""
import argparse
import re
import subprocess
import sys

# ---------------------------------------------------------------------------
# The reference algorithm.
#
# Both schedules share one eight-phase program per rank, written in terms of
#   width   - ranks between the end where the rank's own stream enters and the
#             crossing point (DualPipe: P/2; DualPipeV: P),
#   pos     - the rank's distance from that end (DualPipe: min(r, P-1-r);
#             DualPipeV: r),
#   steady  - number of steps of the main loop,
#   turning - whether the rank sits at the crossing point (DualPipe: the two
#             middle ranks; DualPipeV: the last rank).
# Phases are logical: 0 is the rank's own stream (the one that reaches it
# first), 1 the other. Each op is a tuple:
#   ("F", p) ("B", p) ("I", p) ("W",) ("FB", p_forward, p_backward)
# ---------------------------------------------------------------------------


def logical_program(width, pos, steady, turning):
    ops = []
    tail = width - pos - 1
    ops += [("F", 0)] * (2 * tail)                        # 1. own-stream warm-up
    for _ in range(pos + 1):                              # 2. both streams
        ops += [("F", 0), ("F", 1)]
    for _ in range(tail):                                 # 3. zero-bubble start
        ops += [("I", 1), ("W",), ("F", 1)]
    for step in range(steady):                            # 4. main loop
        if step == 0 and turning:
            ops += [("F", 0), ("B", 1)]                   # not overlapped
        else:
            ops.append(("FB", 0, 1))
        ops.append(("FB", 1, 0))
    for _ in range(tail):                                 # 5. own stream drained
        ops += [("B", 1), ("FB", 1, 0)]
    split = False                                         # 6. backwards only;
    for step in range(pos + 1):                           #    W deferred from the
        if step == (pos + 1) // 2 and pos % 2 == 1:       #    middle iteration on
            split = True
        ops.append(("I" if split else "B", 1))
        if step == (pos + 1) // 2 and pos % 2 == 0:
            split = True
        ops.append(("I" if split else "B", 0))
    for _ in range(tail):                                 # 7. fill with W
        ops += [("W",), ("I", 0)]
    ops += [("W",)] * (pos + 1)                           # 8. remaining W
    return ops


class Layout:
    """Parameters of one schedule instance and the stage held by each slot."""

    def __init__(self, kind, P, M):
        self.kind, self.P, self.M = kind, P, M
        if kind == "dualpipe":
            # The reference asserts these in DualPipe.step().
            if P < 2 or P % 2 != 0:
                raise ValueError("DualPipe needs an even number of ranks")
            if M <= 0 or M % 2 != 0 or M < 2 * P:
                raise ValueError("DualPipe needs an even M >= 2*P")
            self.flows = 2
            self.per_flow = M // 2
            self.num_stages = P
        elif kind == "dualpipev":
            # DualPipeV.step() only asserts num_chunks > 0 and num_chunks >= 2 * num_ranks.
            if P < 1:
                raise ValueError("DualPipeV needs at least one rank")
            if M <= 0 or M < 2 * P:
                raise ValueError("DualPipeV needs M >= 2*P")
            self.flows = 1
            self.per_flow = M
            self.num_stages = 2 * P
        else:
            raise ValueError(f"unknown schedule kind {kind!r}")

    def rank_params(self, r):
        """(width, pos, steady, turning, physical chunk of logical phase 0)."""
        P, M = self.P, self.M
        if self.kind == "dualpipe":
            width = P // 2
            pos = min(r, P - 1 - r)
            return width, pos, M // 2 - P + pos + 1, pos == width - 1, 0 if r < width else 1
        return P, r, M - 2 * P + r + 1, r == P - 1, 0

    def flow_and_stage(self, r, chunk):
        """Which flow chunk `chunk` of rank r serves, and its stage in that flow's order."""
        if self.kind == "dualpipe":
            return (0, r) if chunk == 0 else (1, self.P - 1 - r)
        return 0, (r if chunk == 0 else 2 * self.P - 1 - r)


def rank_order(layout, r):
    """The physical op list of rank r: tuples (kind, chunk, mb) and ("FB", f, b)."""
    width, pos, steady, turning, own = layout.rank_params(r)
    chunk_of = lambda phase: phase ^ own
    next_f = [0, 0]
    next_b = [0, 0]
    deferred = []  # (chunk, mb) of each I, oldest first
    out = []

    def forward(phase):
        c = chunk_of(phase)
        op = ("F", c, next_f[c])
        next_f[c] += 1
        return op

    def backward(kind, phase):
        c = chunk_of(phase)
        op = (kind, c, next_b[c])
        next_b[c] += 1
        if kind == "I":
            deferred.append((c, op[2]))
        return op

    for op in logical_program(width, pos, steady, turning):
        if op[0] == "F":
            out.append(forward(op[1]))
        elif op[0] in ("B", "I"):
            out.append(backward(op[0], op[1]))
        elif op[0] == "W":
            if not deferred:
                raise AssertionError(f"rank {r}: W with no deferred I")
            out.append(("W",) + deferred.pop(0))
        else:
            out.append(("FB", forward(op[1]), backward("B", op[2])))
    if deferred:
        raise AssertionError(f"rank {r}: deferred I left without W: {deferred}")
    for c in range(2):
        if next_f[c] != layout.per_flow or next_b[c] != layout.per_flow:
            raise AssertionError(f"rank {r} chunk {c}: {next_f[c]} F, {next_b[c]} backwards, "
                                 f"want {layout.per_flow}")
    return out


def schedule(kind, P, M):
    layout = Layout(kind, P, M)
    orders = [rank_order(layout, r) for r in range(P)]
    replay(layout, orders)
    return layout, orders


def replay(layout, orders):
    """Runs the orders rank by rank, each op once its inputs exist; fails on a stall.

    Data dependencies only (F after the previous stage's F, a backward after the
    next stage's backward and its own F, W after its I); communication is assumed
    to be buffered, so this checks that the order is consistent, not its timing.
    """
    done = set()
    last = layout.num_stages - 1

    def key(kind, r, chunk, mb):
        flow, stage = layout.flow_and_stage(r, chunk)
        return (kind, flow, stage, mb)

    def ready(r, op):
        kind, chunk, mb = op
        flow, stage = layout.flow_and_stage(r, chunk)
        if kind == "F":
            return stage == 0 or ("F", flow, stage - 1, mb) in done
        if kind in ("B", "I"):
            return ("F", flow, stage, mb) in done and (
                stage == last or ("G", flow, stage + 1, mb) in done)
        return ("I", flow, stage, mb) in done  # W

    def finish(r, op):
        kind, chunk, mb = op
        done.add(key(kind, r, chunk, mb))
        if kind in ("B", "I"):
            done.add(key("G", r, chunk, mb))  # the input gradient exists

    pc = [0] * len(orders)
    progress = True
    while progress:
        progress = False
        for r, order in enumerate(orders):
            while pc[r] < len(order):
                op = order[pc[r]]
                parts = op[1:] if op[0] == "FB" else (op,)
                if not all(ready(r, p) for p in parts):
                    break
                for p in parts:
                    finish(r, p)
                pc[r] += 1
                progress = True
    stuck = [f"rank {r} at {show(orders[r][pc[r]])}" for r in range(len(orders))
             if pc[r] < len(orders[r])]
    if stuck:
        raise AssertionError("order cannot run: " + ", ".join(stuck))


# ---------------------------------------------------------------------------
# Notations.
# ---------------------------------------------------------------------------


def show(op):
    if op[0] == "FB":
        return f"FB({show(op[1])}|{show(op[2])})"
    kind, chunk, mb = op
    return f"{kind}{chunk}.{mb}"


def ir_lines(orders):
    return [f"rank {r}: " + " ".join(show(op) for op in order) for r, order in enumerate(orders)]


def torch_lines(layout, orders):
    """PyTorch's pipeline_order notation: <stage><type><mb>, pairs as (F;B)OVERLAP_F_B."""

    def one(r, op):
        if op[0] == "FB":
            return f"({one(r, op[1])};{one(r, op[2])})OVERLAP_F_B"
        kind, chunk, mb = op
        return f"{layout.flow_and_stage(r, chunk)[1]}{kind}{mb}"

    return [f"{r}: " + " ".join(one(r, op) for op in order) for r, order in enumerate(orders)]


TORCH_ACTION = re.compile(r"(\d+)([FBIW])(\d+)$")
TORCH_PAIR = re.compile(r"\((\S+);(\S+)\)OVERLAP_F_B$")


def from_torch(lines):
    """Converts PyTorch DualPipeV pipeline_order lines (V layout) to the ir notation."""
    ranks = []
    for line in lines:
        m = re.match(r"(\d+): (.*)$", line)
        if m:
            ranks.append((int(m.group(1)), m.group(2).split()))
    P = len(ranks)

    def one(r, action):
        pair = TORCH_PAIR.match(action)
        if pair:
            return f"FB({one(r, pair.group(1))}|{one(r, pair.group(2))})"
        m = TORCH_ACTION.match(action)
        if not m:
            raise ValueError(f"rank {r}: cannot read action {action!r}")
        stage, kind, mb = int(m.group(1)), m.group(2), int(m.group(3))
        if stage == r:
            chunk = 0
        elif stage == 2 * P - 1 - r:
            chunk = 1
        else:
            raise ValueError(f"rank {r}: stage {stage} is not in the V layout")
        return f"{kind}{chunk}.{mb}"

    return [f"rank {r}: " + " ".join(one(r, a) for a in actions) for r, actions in ranks]


# ---------------------------------------------------------------------------
# The grid that the lit tests run.
# ---------------------------------------------------------------------------


def grid():
    """(kind, P, M) cases: every P the reference accepts from a fixed list, and
    M in {2P, 2P+2, 3P, 4P+2, 64} where the reference accepts it."""
    cases = []
    for kind, ps in (("dualpipe", (2, 4, 6, 8, 16)), ("dualpipev", (1, 2, 3, 4, 8, 16))):
        for P in ps:
            for M in sorted({2 * P, 2 * P + 2, 3 * P, 4 * P + 2, 64}):
                try:
                    Layout(kind, P, M)
                except ValueError:
                    continue
                cases.append((kind, P, M))
    return cases


def run_pipec(pipec, args):
    return subprocess.run([pipec] + args, capture_output=True, text=True)


def cmd_compare(pipec, examples):
    failures, counts = 0, {}
    for kind, P, M in grid():
        _, orders = schedule(kind, P, M)
        want = "\n".join(ir_lines(orders)) + "\n"
        res = run_pipec(pipec, ["emit", f"{examples}/{kind}.pipe", "--target", "ir",
                                "-D", f"P={P}", "-D", f"M={M}"])
        if res.returncode != 0 or res.stdout != want:
            failures += 1
            print(f"MISMATCH {kind} P={P} M={M} (exit {res.returncode})")
            print(res.stderr, end="")
            got = res.stdout.splitlines()
            for w, g in zip(want.splitlines(), got + [""] * len(want)):
                if w != g:
                    print(f"  model: {w}\n  pipec: {g}")
                    break
        counts[kind] = counts.get(kind, 0) + 1
    for kind, n in counts.items():
        print(f"{kind}: {n} cases compared")
    print("all match" if failures == 0 else f"{failures} mismatches")
    return 1 if failures else 0


def cmd_check(pipec, examples):
    failures, n = 0, 0
    for kind, P, M in grid():
        res = run_pipec(pipec, ["check", f"{examples}/{kind}.pipe", "-D", f"P={P}", "-D", f"M={M}"])
        n += 1
        if res.returncode != 0 or res.stdout or res.stderr:
            failures += 1
            print(f"NOT CLEAN {kind} P={P} M={M} (exit {res.returncode})")
            print(res.stdout + res.stderr, end="")
    print(f"{n} cases checked, " + ("all clean" if failures == 0 else f"{failures} not clean"))
    return 1 if failures else 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("emit")
    p.add_argument("kind", choices=["dualpipe", "dualpipev"])
    p.add_argument("P", type=int)
    p.add_argument("M", type=int)
    p = sub.add_parser("torch")
    p.add_argument("P", type=int)
    p.add_argument("M", type=int)
    p = sub.add_parser("from-torch")
    p.add_argument("file")
    for name in ("compare", "check"):
        p = sub.add_parser(name)
        p.add_argument("pipec")
        p.add_argument("examples")
    args = parser.parse_args(argv)

    try:
        if args.cmd == "emit":
            print("\n".join(ir_lines(schedule(args.kind, args.P, args.M)[1])))
        elif args.cmd == "torch":
            layout, orders = schedule("dualpipev", args.P, args.M)
            print("\n".join(torch_lines(layout, orders)))
        elif args.cmd == "from-torch":
            with open(args.file) as f:
                print("\n".join(from_torch(f.read().splitlines())))
        elif args.cmd == "compare":
            return cmd_compare(args.pipec, args.examples)
        else:
            return cmd_check(args.pipec, args.examples)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
