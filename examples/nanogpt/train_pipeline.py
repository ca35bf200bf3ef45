"""Train the nanoGPT example with a pipec schedule on torch.distributed.

Ordinary PyTorch modules (model.py), no export step, no pipec program to build:
pipec.torch.Pipeline compiles the schedule for these sizes and runs it over the
process group torchrun starts (gloo on CPU, NCCL on GPUs).

    # DualPipeV: 2P = 4 stages on P = 2 processes
    torchrun --standalone --nproc-per-node 2 examples/nanogpt/train_pipeline.py --schedule dualpipev
    # DualPipe: P = 4 stages, each held twice (two flows), on 4 processes
    torchrun --standalone --nproc-per-node 4 examples/nanogpt/train_pipeline.py --schedule dualpipe
    # The same training in one process, no pipeline: the reference
    python examples/nanogpt/train_pipeline.py --schedule dualpipev --reference

Every step trains on the same M micro-batches in both (sampler.py draws them
from the step number), the loss is the mean of the M micro-batch losses (mean
cross-entropy per token), and the optimizer is torch.optim.AdamW over the
parameters this rank holds (pipe.modules()): the two copies of a DualPipe stage
get the same gradient and so the same step. `--out FILE` writes the per-step
losses and the final parameters as JSON, for tests/python/test_nanogpt_pipeline.py.
"""
import argparse
import copy
import json
import os
import sys

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model import GPTConfig, lm_loss, make_stages  # noqa: E402
from sampler import micro_batch  # noqa: E402
from tokenizer import encode  # noqa: E402

# Stages per schedule at P ranks: DualPipeV folds 2P stages in a V; DualPipe
# holds P stages twice, one copy per direction.
STAGES = {"dualpipev": lambda p: 2 * p, "dualpipe": lambda p: p}


def step_batch(tokens, step, args, seq):
    """The step's whole batch: M micro-batches of `micro_batch_size` sequences,
    stacked along dimension 0 (Pipeline splits it back into the M)."""
    xs, ys = [], []
    for mb in range(args.microbatches):
        inputs, targets = micro_batch(tokens, args.seed, step, mb, args.micro_batch_size, seq)
        xs += inputs
        ys += targets
    return torch.tensor(xs), torch.tensor(ys)


def loss_fn(logits, targets):
    return lm_loss(logits, targets)


def train(args, config, tokens):
    dtype = torch.float64 if args.dtype == "fp64" else torch.float32
    if args.reference:
        ranks = args.ranks
        modules = make_stages(config, STAGES[args.schedule](ranks), dtype)
        held = list(enumerate(modules))
    else:
        dist.init_process_group("gloo" if not torch.cuda.is_available() else "nccl")
        ranks = dist.get_world_size()
        split = make_stages(config, STAGES[args.schedule](ranks), dtype)
        try:
            from pipec.torch import Pipeline
        except ImportError:  # not installed (pip install ./python): this checkout's copy
            sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
            from pipec.torch import Pipeline

        pipe = Pipeline(args.schedule, {"P": ranks, "M": args.microbatches},
                        lambda s: copy.deepcopy(split[s]), loss_fn)
        held = list(pipe.modules())
    optimizer = torch.optim.AdamW([p for _, m in held for p in m.parameters()], lr=args.lr)
    losses = []
    for step in range(1, args.steps + 1):
        x, y = step_batch(tokens, step, args, config.seq)
        optimizer.zero_grad(set_to_none=True)
        if args.reference:
            loss = 0
            for xs, ys in zip(x.chunk(args.microbatches), y.chunk(args.microbatches)):
                out = xs
                for _, m in held:
                    out = m(out)
                loss = loss + lm_loss(out, ys) / args.microbatches
            loss.backward()
            loss = loss.item()
        else:
            loss = pipe.step(x, target=y)
            loss = None if loss is None else float(loss)
        optimizer.step()
        losses.append(loss)
        if loss is not None:
            print(f"step {step}: loss {loss:.12g}", flush=True)
    return ranks, held, losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedule", choices=sorted(STAGES), default="dualpipev")
    parser.add_argument("--microbatches", type=int, default=4, help="M")
    parser.add_argument("--micro-batch-size", type=int, default=2, help="sequences per micro-batch")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--dtype", choices=("fp64", "fp32"), default="fp64")
    parser.add_argument("--seed", type=int, default=2, help="data seed (sampler.py)")
    parser.add_argument("--n-layer", type=int, default=8)
    parser.add_argument("--n-embd", type=int, default=32)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--reference", action="store_true", help="one process, no pipeline")
    parser.add_argument("--ranks", type=int, default=2, help="P the reference splits for")
    parser.add_argument("--out", help="write losses and final parameters here (JSON)")
    args = parser.parse_args()
    torch.set_num_threads(1)  # small matrices; the ranks share the cores

    config = GPTConfig(seq=args.seq, n_layer=args.n_layer, n_embd=args.n_embd, n_head=4)
    with open(os.path.join(HERE, "data", "input.txt"), encoding="utf-8") as f:
        tokens = encode(f.read())
    ranks, held, losses = train(args, config, tokens)
    if args.out:
        rank = 0 if args.reference else dist.get_rank()
        record = {"ranks": ranks, "losses": losses,
                  "params": {f"{s}.{name}": p.detach().double().flatten().tolist()
                             for s, m in held for name, p in m.named_parameters()}}
        with open(f"{args.out}.{rank}.json" if not args.reference else args.out, "w") as f:
            json.dump(record, f)
    if not args.reference:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
