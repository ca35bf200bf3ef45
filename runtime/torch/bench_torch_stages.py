#!/usr/bin/env python3
"""Times torch stages under pipec programs against LibTorch's own single-process step.

    ~/.cache/pipec/torch-venv/bin/python runtime/torch/bench_torch_stages.py build/bin/pipec

Exports an MLP model (per stage two Linear-GELU-Linear blocks with residuals,
fp32), builds 1F1B programs with --stages torchscript at P=2 and P=4 (one stage
per rank), and prints side by side, per step of M micro-batches:
  - LibTorch: the same TorchScript files run stage after stage in this process
    (one intra-op thread, graph optimisations off, as the runtime runs them);
  - the program's --check reference (TorchStage, one thread), from the run time
    with --check minus the run time without;
  - the pipeline step (the program's own per-step time).
Per op: a step's time over its F and B ops (the pipeline's over one rank's).
A benchmark, not a test: nothing is asserted.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pipec_torch_export import export_stages  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc1 = torch.nn.Linear(hidden, 4 * hidden)
        self.fc2 = torch.nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(x)))


def libtorch_step_ms(model_dir, stages, micro_batches, seq, hidden, steps):
    torch.set_num_threads(1)
    torch._C._set_graph_executor_optimize(False)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.jit")
        modules = [torch.jit.load(os.path.join(model_dir, "stage_%d.pt" % s)) for s in range(stages)]
    x = torch.randn(micro_batches, 1, seq, hidden)
    target = torch.randn(micro_batches, 1, seq, hidden)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        for m in range(micro_batches):
            y = x[m]
            for module in modules:
                y = module(y)
            torch.nn.functional.mse_loss(y, target[m]).backward()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times[1:])


def run_program(exe, model_dir, seq, hidden, steps, check):
    args = [exe, "--model", "torchscript", "--model-path", model_dir, "--seq", str(seq), "--hidden", str(hidden),
            "--steps", str(steps)]
    start = time.perf_counter()
    out = subprocess.run(args + (["--check"] if check else []), check=True, capture_output=True, text=True).stdout
    wall = (time.perf_counter() - start) * 1000
    step_ms = [float(m) for m in re.findall(r"^step \d+: loss .*?, ([0-9.]+) ms", out, re.M)]
    return wall, statistics.median(step_ms[1:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pipec")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--micro-batches", type=int, default=8)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    examples = os.path.join(HERE, "..", "..", "examples")
    M = args.micro_batches
    print("1F1B, M=%d, hidden %d, %d tokens per micro-batch, fp32, ms per step (median)" % (M, args.hidden, args.seq))
    print("%-3s %10s %12s %10s %14s %14s" % ("P", "LibTorch", "reference", "pipeline", "LibTorch/op", "pipeline/op"))
    with tempfile.TemporaryDirectory() as tmp:
        for P in (2, 4):
            torch.manual_seed(0)
            model = os.path.join(tmp, "model%d" % P)
            export_stages([torch.nn.Sequential(Block(args.hidden), Block(args.hidden)) for _ in range(P)], model,
                          example_input=torch.randn(1, args.seq, args.hidden), dtype=torch.float32)
            exe = os.path.join(tmp, "1f1b_p%d" % P)
            subprocess.run([args.pipec, "build", os.path.join(examples, "1f1b.pipe"), "--target", "cpu",
                            "-D", "P=%d" % P, "-D", "M=%d" % M, "--stages", "torchscript", "-o", exe], check=True)
            eager = libtorch_step_ms(model, P, M, args.seq, args.hidden, args.steps)
            wall_check, _ = run_program(exe, model, args.seq, args.hidden, args.steps, True)
            wall, pipeline = run_program(exe, model, args.seq, args.hidden, args.steps, False)
            reference = (wall_check - wall) / args.steps
            print("%-3d %10.2f %12.2f %10.2f %11.1f us %11.1f us" % (
                P, eager, reference, pipeline, 1000 * eager / (2 * M * P), 1000 * pipeline / (2 * M)))


if __name__ == "__main__":
    main()
