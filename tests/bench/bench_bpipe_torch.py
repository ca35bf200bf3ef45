#!/usr/bin/env python3
"""BPipe's transfers in the PyTorch runtime: examples/bpipe.pipe against the same
order with its Evict/Hold/Return/Load lines removed, side by side in one gloo job.

    PIPEC=build/bin/pipec ~/.cache/pipec/torch-venv/bin/python tests/bench/bench_bpipe_torch.py \
        [--P 4] [--M 8] [--width 256] [--tokens 64] [--steps 10]

Per step of M micro-batches, the two pipelines alternate (warm-up 2 steps each);
prints the median step time of each, their ratio, rank 0's measured peak of
live micro-batches and what its Evicts moved per step. On a CPU the transfers
are gloo messages between processes of one machine: the ratio is their cost
with nothing to hide them behind but the other ranks' compute. A benchmark, not
a test: nothing is asserted.
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import launcher  # noqa: E402


def worker(args) -> None:
    import torch
    import torch.distributed as dist
    import pipec.torch
    import run_suite

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    sizes = {"P": args.P, "M": args.M}

    def stage_fn(s):
        torch.manual_seed(100 + s)
        return torch.nn.Sequential(torch.nn.Linear(args.width, args.width), torch.nn.GELU(),
                                   torch.nn.Linear(args.width, args.width))

    loss = torch.nn.functional.mse_loss
    path = os.path.join(HERE, "..", "..", "examples", "bpipe.pipe")
    pipes = {"bpipe": pipec.torch.Pipeline("bpipe", sizes, stage_fn, loss),
             "without": pipec.torch.Pipeline(run_suite.without_transfers(path), sizes,
                                              stage_fn, loss)}
    torch.manual_seed(0)
    x = torch.randn(args.M * args.tokens, args.width)
    y = torch.randn_like(x)
    times = {name: [] for name in pipes}
    for step in range(args.steps + 2):
        for name, pipe in pipes.items():
            dist.barrier()
            start = time.perf_counter()
            pipe.step(x, target=y)
            dist.barrier()
            if step >= 2:
                times[name].append(time.perf_counter() - start)
    if dist.get_rank() == 0:
        b, w = statistics.median(times["bpipe"]), statistics.median(times["without"])
        stats = pipes["bpipe"].stats
        print(f"MEASURED P={args.P} M={args.M} width={args.width} tokens={args.tokens}: "
              f"bpipe {b * 1e3:.1f} ms, without transfers {w * 1e3:.1f} ms, ratio {b / w:.3f}; "
              f"rank 0 peak {stats['measured_peak_activations']} (without: "
              f"{pipes['without'].stats['measured_peak_activations']}), evicted per step "
              f"{stats['evicted']['evicted']} micro-batches, {stats['evicted']['bytes'] / 1e6:.2f} MB",
              flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--P", type=int, default=4)
    parser.add_argument("--M", type=int, default=8)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--worker", action="store_true")
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return 0
    argv = [os.path.abspath(__file__), "--worker"] + sys.argv[1:]
    results = launcher.launch(args.P, 600, argv)
    for rank, (code, out) in enumerate(results):
        if code != 0 or rank == 0:
            print(out if code != 0 else "\n".join(
                line for line in out.splitlines() if line.startswith("MEASURED")))
    return 0 if all(code == 0 for code, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
