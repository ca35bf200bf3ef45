#!/usr/bin/env python3
"""pipec's torch.distributed executor against PyTorch's own pipelining runtime.

    PIPEC=build/bin/pipec ~/.cache/pipec/torch-venv/bin/python tests/bench/bench_torch_runtime.py \
        [--schedules 1f1b,zbv] [--P 2] [--M 8] [--width 256] [--tokens 64] [--steps 20]

Same schedule, same modules, same machine, side by side, per step of M
micro-batches (median over --steps after 3 warm-up steps):
  - pipec: pipec.torch.Pipeline (pipec's executor, python/pipec);
  - pytorch: PyTorch's _PipelineScheduleRuntime running the same order
    (pipec.torch_native), P gloo processes, the same stage modules;
  - single: the P stages run one after the other in one process, M micro-batches,
    the mean loss backward (what a pipeline step computes);
and per op: the step over one rank's compute ops (F, B, I, W). A second table
runs width-1 stages, where compute is nearly nothing, so its per-op time is each
runtime's own overhead per op (its sends, receives and bookkeeping included).
Every process uses one intra-op thread. A benchmark, not a test: nothing is
asserted; the README quotes its tables.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import launcher  # noqa: E402

# (schedule, extra sizes, stages per rank): schedules both runtimes run.
SCHEDULES = {
    "gpipe": ({}, 1), "1f1b": ({}, 1), "interleaved_1f1b": ({"v": 2}, 2),
    "zb_h1": ({}, 1), "zbv": ({}, 2), "dualpipev": ({}, 2),
}


def make_stage(width):
    def stage_fn(s):
        torch.manual_seed(100 + s)
        return torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.GELU(),
                                   torch.nn.Linear(width, width))
    return stage_fn


def loss_fn(output, target):
    return torch.nn.functional.mse_loss(output, target)


def _batch(M, tokens, width):
    torch.manual_seed(0)
    x = torch.randn(M * tokens, width)
    return x, torch.randn_like(x)


def _timed(step, steps, group=None):
    times = []
    for i in range(steps + 3):
        if group is not None:
            dist.barrier(group)
        start = time.perf_counter()
        step()
        if i >= 3:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def _ops_per_rank(order):
    return max(sum(len(a.sub_actions or (a,)) for a in actions) for actions in order.values())


def worker(runtime, schedule, sizes, width, tokens, steps, out):
    """One rank (launcher.py starts P of them, as torchrun would)."""
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.set_num_threads(1)
    stage_fn = make_stage(width)
    x, y = _batch(sizes["M"], tokens, width)
    from pipec import torch_native as tn

    ops = _ops_per_rank(tn.pipeline_order(schedule, sizes))
    if runtime == "pytorch":
        sched, stages = tn.pytorch_schedule(schedule, sizes, stage_fn, loss_fn)
        params = [p for st in stages for p in st.submod.parameters()]

        def step():
            for p in params:
                p.grad = None
            sched.step(x, target=y, losses=[])
    else:
        from pipec.torch import Pipeline

        pipe = Pipeline(schedule, sizes, stage_fn, loss_fn)
        params = [p for _, m in pipe.modules() for p in m.parameters()]

        def step():
            for p in params:
                p.grad = None
            pipe.step(x, target=y)
    seconds = _timed(step, steps, dist.group.WORLD)
    if rank == 0:
        with open(out, "w") as f:
            f.write(f"{seconds} {ops}")
    dist.destroy_process_group()


def single(schedule, sizes, per_rank, width, tokens, steps):
    torch.set_num_threads(1)
    stage_fn = make_stage(width)
    modules = [stage_fn(s) for s in range(sizes["P"] * per_rank)]
    M = sizes["M"]
    x, y = _batch(M, tokens, width)

    def step():
        for m in modules:
            m.zero_grad(set_to_none=True)
        for xs, ys in zip(x.chunk(M), y.chunk(M)):
            out = xs
            for m in modules:
                out = m(out)
            (loss_fn(out, ys) / M).backward()
    return _timed(step, steps)


def measure(schedule, P, M, width, tokens, steps):
    extra, per_rank = SCHEDULES[schedule]
    sizes = {"P": P, "M": M, **extra}
    row = {}
    with tempfile.TemporaryDirectory() as tmp:
        for runtime in ("pipec", "pytorch"):
            out = os.path.join(tmp, runtime)
            results = launcher.launch(P, 900, [os.path.abspath(__file__), "--worker", runtime,
                                               schedule, json.dumps(sizes), str(width),
                                               str(tokens), str(steps), out])
            if any(code != 0 for code, _ in results):
                raise RuntimeError(f"{runtime} {schedule}: " + "\n".join(o for _, o in results))
            seconds, ops = open(out).read().split()
            row[runtime], row["ops"] = float(seconds), int(ops)
    row["single"] = single(schedule, sizes, per_rank, width, tokens, steps)
    row["single_ops"] = 2 * M * P * per_rank  # F and B of every stage and micro-batch
    return row


def print_table(title, rows):
    print(f"\n{title}")
    print("| schedule | pipec step ms | PyTorch step ms | pipec / PyTorch | single-process ms "
          "| pipec µs/op | PyTorch µs/op | single µs/op |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {1e3 * r['pipec']:.2f} | {1e3 * r['pytorch']:.2f} | "
              f"{r['pipec'] / r['pytorch']:.3f} | {1e3 * r['single']:.2f} | "
              f"{1e6 * r['pipec'] / r['ops']:.0f} | {1e6 * r['pytorch'] / r['ops']:.0f} | "
              f"{1e6 * r['single'] / r['single_ops']:.0f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", default="1f1b,zbv,interleaved_1f1b,zb_h1,dualpipev")
    parser.add_argument("--P", type=int, default=2)
    parser.add_argument("--M", type=int, default=8)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--tokens", type=int, default=64, help="rows per micro-batch")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--no-overhead", action="store_true", help="skip the width-1 table")
    args = parser.parse_args()
    names = args.schedules.split(",")
    print(f"torch {torch.__version__}, P={args.P}, M={args.M}, gloo, one thread per process, "
          f"median of {args.steps} steps")
    rows = [(n, measure(n, args.P, args.M, args.width, args.tokens, args.steps)) for n in names]
    print_table(f"width {args.width}, {args.tokens} rows per micro-batch, fp32", rows)
    if not args.no_overhead:
        rows = [(n, measure(n, args.P, args.M, 1, 1, args.steps)) for n in names]
        print_table("width 1, 1 row per micro-batch (per-op overhead)", rows)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        a = sys.argv[2:]
        worker(a[0], a[1], json.loads(a[2]), int(a[3]), int(a[4]), int(a[5]), a[6])
    else:
        main()
