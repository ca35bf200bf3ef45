#!/usr/bin/env python3
"""An independent model of the op orders of the newer library schedules.

It is the oracle for examples/interleaved_1f1b.pipe, zb_h1.pipe, zbv.pipe and
chimera.pipe: plain Python that re-derives each rank's compute order from the
published algorithm, shares no code with pipec, and prints it in PyTorch's
compute-only CSV notation (what `pipec emit --target torch-csv` writes):

    0F0,0F1,4F0,4B0,0I1,0W1,(0F7;7B3)OVERLAP_F_B

  interleaved_1f1b  PyTorch's ScheduleInterleaved1F1B (Megatron-LM's virtual
                    pipeline): per-rank warm-up count, forwards grouped by
                    rounds of micro-batches over the chunks, 1F1B steady state.
  zb_h1             ZB-H1 (Qi et al., ICLR 2024): 1F1B with I/W split, rank r
                    holding back its first r W's (PyTorch's
                    ScheduleInterleavedZeroBubble with one stage per rank).
  zbv               PyTorch's ScheduleZBVZeroBubble: counters per chunk, phases
                    laid out for max(2P-1, M) micro-batches, then the ops of
                    micro-batches >= M dropped.
  chimera           Chimera's time table (Li and Hoefler, SC'21): micro-batches
                    of two opposite pipelines entering every two steps, units of
                    P micro-batches every 2P steps; simulated step by step.

When this model was written it was compared with PyTorch 2.15's own order
generators on a grid (P up to 16, M up to 64, v up to 4); recordings of
PyTorch's output are in tests/lit/library/Inputs/. The model also replays every
order against the data dependencies, so an order that could not run fails.

Subcommands:
  torch KIND P M [v]        print the order (one CSV row per rank)
  compare PIPEC EXAMPLES    compare `pipec emit --target torch-csv` on the grid
                            (Chimera, a stage on two ranks: the model's CSV
                            imported, both as `emit --target ir`)
"""
import argparse
import os
import subprocess
import sys
import tempfile

# Ops are (kind, stage, mb) with global stage and micro-batch ids.


def interleaved_1f1b(P, M, v):
    if P < 1 or M < 1 or v < 2:
        raise ValueError("interleaved 1F1B needs P >= 1, M >= 1, v >= 2")
    rounds = max(1, M // P)
    if M % rounds:
        raise ValueError(f"M={M} is not a multiple of the {rounds} rounds")
    group = M // rounds
    orders = []
    for r in range(P):
        total = v * M
        warmup = min((v - 1) * group + 2 * (P - 1 - r), total)
        next_mb = {}

        def take(stage):
            mb = next_mb.get(stage, 0)
            next_mb[stage] = mb + 1
            return mb

        def forward(k):
            stage = ((k // group) % v) * P + r
            return ("F", stage, take(("F", stage)))

        def backward(j):
            stage = (v - 1 - (j // group) % v) * P + r
            return ("B", stage, take(("B", stage)))

        ops = [forward(k) for k in range(warmup)]
        for j in range(total - warmup):
            ops += [forward(warmup + j), backward(j)]
        ops += [backward(j) for j in range(total - warmup, total)]
        orders.append(ops)
    return orders


def zb_h1(P, M):
    if P < 1 or M < 1:
        raise ValueError("ZB-H1 needs M >= 1 and P >= 1")
    orders = []
    for r in range(P):
        ops, deferred, f, i = [], [], 0, 0

        def run_w():
            ops.append(("W", r, deferred.pop(0)))

        def run_i():
            nonlocal i
            ops.append(("I", r, i))
            deferred.append(i)
            i += 1

        warmup = min(P - 1 - r, M)  # M < P: all M forwards are the warm-up
        for _ in range(warmup):
            ops.append(("F", r, f))
            f += 1
        for step in range(M - warmup):
            ops.append(("F", r, f))
            f += 1
            run_i()
            if step >= r:
                run_w()
        for _ in range(warmup):
            run_i()
            if i - 1 >= r:  # a W follows the k-th I only once k >= r
                run_w()
        while deferred:
            run_w()
        orders.append(ops)
    return orders


def zbv(P, M):
    if P < 1 or M < 1:
        raise ValueError("ZB-V needs P >= 1 and M >= 1")
    n = max(2 * P - 1, M)
    orders = []
    for r in range(P):
        down, up = r, 2 * P - 1 - r
        count = {}
        ops = []

        def op(kind, stage, counter=None):
            key = counter or (kind, stage)
            mb = count.get(key, 0)
            count[key] = mb + 1
            ops.append((kind, stage, mb))

        for _ in range(2 * (P - r) - 1):
            op("F", down)
        for _ in range(r):
            op("F", up)
            op("F", down)
        for _ in range(P - r):
            op("F", up)
            op("I", up)
            op("W", up)
        while count.get(("F", up), 0) < count.get(("F", down), 0) or count[("F", down)] < n:
            if count[("F", down)] < n:
                op("F", down)
            op("I", down)
            op("W", down)
            op("F", up)
            op("I", up)
            op("W", up)
        for _ in range(r):
            op("I", down)
            op("I", up)
        for _ in range(P - r):
            op("I", down)
            op("W", down)
        while count[("W", up)] < count[("I", up)]:
            op("W", up)
        while count[("W", down)] < count[("I", down)]:
            op("W", down)
        orders.append([o for o in ops if o[2] < M])
    return orders


def chimera(P, M):
    if P < 2 or P % 2 or M < P or M % P:
        raise ValueError("Chimera needs an even P >= 2 and M a multiple of P")
    half, per_flow = P // 2, M // 2
    timeline = [dict() for _ in range(P)]  # rank -> step -> op

    def place(rank, step, op):
        if step in timeline[rank]:
            raise AssertionError(f"rank {rank} has two ops at step {step}")
        timeline[rank][step] = op

    for flow in (0, 1):  # 0: down (stage s on rank s), 1: up (stage s on rank P-1-s)
        for n in range(per_flow):
            unit, k = divmod(n, half)
            enter = 2 * P * unit + 2 * k
            mb = n + flow * per_flow
            # the micro-batch walks down its pipeline one stage per step, then back
            for step_in_walk in range(2 * P):
                stage = step_in_walk if step_in_walk < P else 2 * P - 1 - step_in_walk
                rank = stage if flow == 0 else P - 1 - stage
                place(rank, enter + step_in_walk, ("F" if step_in_walk < P else "B", stage, mb))
    return [[steps[t] for t in sorted(steps)] for steps in timeline]


def build(kind, P, M, v=2):
    if kind == "interleaved_1f1b":
        num_stages, orders = P * v, interleaved_1f1b(P, M, v)
    elif kind == "zb_h1":
        num_stages, orders = P, zb_h1(P, M)
    elif kind == "zbv":
        num_stages, orders = 2 * P, zbv(P, M)
    elif kind == "chimera":
        num_stages, orders = P, chimera(P, M)
    else:
        raise ValueError(f"unknown schedule {kind!r}")
    replay(orders, num_stages, M)
    return orders


def replay(orders, num_stages, M):
    """Runs the orders, each op once its inputs exist; fails on a stall or on
    work done twice or never. Communication is assumed buffered."""
    done = set()

    def ready(op):
        kind, stage, mb = op
        if kind == "F":
            return stage == 0 or ("F", stage - 1, mb) in done
        if kind in ("B", "I"):
            return ("F", stage, mb) in done and (
                stage == num_stages - 1 or ("G", stage + 1, mb) in done)
        return ("G", stage, mb) in done  # W after its I

    pc = [0] * len(orders)
    progress = True
    while progress:
        progress = False
        for r, order in enumerate(orders):
            while pc[r] < len(order) and ready(order[pc[r]]):
                kind, stage, mb = order[pc[r]]
                if (kind, stage, mb) in done:
                    raise AssertionError(f"rank {r}: {kind}{stage}.{mb} runs twice")
                done.add((kind, stage, mb))
                if kind in ("B", "I"):
                    done.add(("G", stage, mb))
                pc[r] += 1
                progress = True
    stuck = [f"rank {r} at {orders[r][pc[r]]}" for r in range(len(orders)) if pc[r] < len(orders[r])]
    if stuck:
        raise AssertionError("order cannot run: " + ", ".join(stuck))
    for stage in range(num_stages):
        for mb in range(M):
            if ("F", stage, mb) not in done or ("G", stage, mb) not in done:
                raise AssertionError(f"stage {stage}, micro-batch {mb} is not covered")


def csv_lines(orders):
    return [",".join(f"{s}{k}{mb}" for k, s, mb in order) for order in orders]


def grid():
    """(kind, P, M, v) cases the lit test compares."""
    cases = []
    for P in (1, 2, 3, 4, 6, 8, 16):
        for M in sorted({1, 2, max(1, P - 1), P, P + 2, 2 * P, 3 * P + 1, 8 * P, 64}):
            for v in (2, 3, 4):
                if M % max(1, M // P) == 0:
                    cases.append(("interleaved_1f1b", P, M, v))
            cases.append(("zb_h1", P, M, None))  # M < P too, as PyTorch allows
            cases.append(("zbv", P, M, None))
            if P % 2 == 0 and M % P == 0:
                cases.append(("chimera", P, M, None))
    return cases


def emit_through_import(pipec, csv_text, source_args):
    """Chimera places a stage on two ranks, which `emit --target torch-csv`
    refuses (PyTorch could not load it): the model's CSV is imported instead and
    both sides are compared as `emit --target ir`, which names the same ops."""
    with tempfile.TemporaryDirectory() as work:
        csv_path = os.path.join(work, "model.csv")
        with open(csv_path, "w") as f:
            f.write(csv_text)
        imported = subprocess.run([pipec, "import", "--from", "torch-csv", csv_path],
                                  capture_output=True, text=True)
        if imported.returncode != 0:
            return imported, None
        pipe_path = os.path.join(work, "model.pipe")
        with open(pipe_path, "w") as f:
            f.write(imported.stdout)
        model = subprocess.run([pipec, "emit", pipe_path, "--target", "ir"],
                               capture_output=True, text=True)
    return subprocess.run([pipec, "emit"] + source_args + ["--target", "ir"],
                          capture_output=True, text=True), model.stdout


def cmd_compare(pipec, examples):
    failures, counts = 0, {}
    for kind, P, M, v in grid():
        want = "\n".join(csv_lines(build(kind, P, M, v or 2))) + "\n"
        source = [f"{examples}/{kind}.pipe", "-D", f"P={P}", "-D", f"M={M}"] + (
            ["-D", f"v={v}"] if v else [])
        if kind == "chimera":
            res, want = emit_through_import(pipec, want, source)
            want = want if want is not None else "(import failed)\n"
        else:
            res = subprocess.run([pipec, "emit"] + source[:1] + ["--target", "torch-csv"] +
                                 source[1:], capture_output=True, text=True)
        if res.returncode != 0 or res.stdout != want:
            failures += 1
            print(f"MISMATCH {kind} P={P} M={M}" + (f" v={v}" if v else "") +
                  f" (exit {res.returncode})")
            print(res.stderr, end="")
            for r, (w, g) in enumerate(zip(want.splitlines(), res.stdout.splitlines() + [""] * P)):
                if w != g:
                    print(f"  rank {r} model: {w}\n  rank {r} pipec: {g}")
                    break
        counts[kind] = counts.get(kind, 0) + 1
    for kind in sorted(counts):
        print(f"{kind}: {counts[kind]} cases compared")
    print("all match" if failures == 0 else f"{failures} mismatches")
    return 1 if failures else 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("torch")
    p.add_argument("kind", choices=["interleaved_1f1b", "zb_h1", "zbv", "chimera"])
    p.add_argument("P", type=int)
    p.add_argument("M", type=int)
    p.add_argument("v", type=int, nargs="?", default=2)
    p = sub.add_parser("compare")
    p.add_argument("pipec")
    p.add_argument("examples")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "torch":
            print("\n".join(csv_lines(build(args.kind, args.P, args.M, args.v))))
            return 0
        return cmd_compare(args.pipec, args.examples)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
