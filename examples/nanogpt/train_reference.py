"""Single-process PyTorch training of the model a pipelined program trains:
the same initial weights (model.make_stages from the exported config), the
same micro-batches (sampler.py, the runtime's sampler ported exactly), the
same loss convention (per micro-batch the mean cross-entropy over its tokens,
the step loss their sum; gradients summed likewise), the same clipping by the
global gradient norm and the same AdamW arithmetic as runtime/src/Optimizer.cpp
(element-wise in fp64, moments and weights rounded to the model's dtype).
Prints one line per step in the program's format:

    step 1: loss 11.0903... (0x1.62e...p+3), ...

    python3 train_reference.py --config out/config.json --data train.bin --steps 300 \\
        --micro-batches 8 --micro-batch-size 4 --lr 0.003 --clip-grad-norm 1
"""
import argparse
import json
import math
import time

import torch

from model import GPTConfig, lm_loss, make_stages
from sampler import micro_batch
from tokenizer import read_tokens

DTYPES = {"fp32": torch.float32, "fp64": torch.float64}


class AdamW:
    """runtime/src/Optimizer.cpp's AdamW: bias-corrected moments, weight decay
    decoupled (lr * wd * w, from the weight before the step), in fp64 per
    element; the moments and the weight are stored rounded to the dtype."""

    def __init__(self, params, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
        self.params = list(params)
        self.lr, self.beta1, self.beta2, self.eps, self.wd = lr, beta1, beta2, eps, weight_decay
        self.first = [torch.zeros_like(p) for p in self.params]
        self.second = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self, step, grad_scale):
        c1 = 1 - math.pow(self.beta1, step)
        c2 = 1 - math.pow(self.beta2, step)
        for p, first, second in zip(self.params, self.first, self.second):
            g = p.grad.to(torch.float64) * grad_scale
            x = p.to(torch.float64)
            m = self.beta1 * first.to(torch.float64) + (1 - self.beta1) * g
            v = self.beta2 * second.to(torch.float64) + ((1 - self.beta2) * g) * g
            first.copy_(m)
            second.copy_(v)
            update = (m / c1) / ((v / c2).sqrt() + self.eps)
            p.copy_(x - self.lr * (update + self.wd * x))


def global_norm(params):
    """The runtime's norm: squares summed in fp64 in stage, parameter, element order."""
    return math.sqrt(sum(float((p.grad.to(torch.float64) ** 2).sum()) for p in params))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="config.json written by export.py")
    parser.add_argument("--data", required=True, help="train.bin (uint16 token ids)")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--micro-batches", type=int, required=True, help="M of the program")
    parser.add_argument("--micro-batch-size", type=int, default=1, help="sequences per micro-batch")
    parser.add_argument("--seed", type=int, default=1, help="the program's --seed (data)")
    parser.add_argument("--dtype", choices=DTYPES, default="fp64")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--clip-grad-norm", type=float, default=0.0)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (1: small matrices gain nothing from more)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    with open(args.config) as f:
        config = GPTConfig(**json.load(f)["config"])
    dtype = DTYPES[args.dtype]
    stages = make_stages(config, 1, dtype)
    params = [p for stage in stages for p in stage.parameters()]
    optimizer = AdamW(params, args.lr, weight_decay=args.weight_decay)
    tokens = read_tokens(args.data)
    data_seed = args.seed + 1  # the program's batch seed
    tokens_per_step = args.micro_batches * args.micro_batch_size * config.seq

    for step in range(1, args.steps + 1):
        start = time.perf_counter()
        for p in params:
            p.grad = None
        step_loss = 0.0
        for mb in range(args.micro_batches):
            inputs, targets = micro_batch(tokens, data_seed, step, mb, args.micro_batch_size, config.seq)
            x = torch.tensor(inputs)  # (sequences, seq) ids
            y = torch.tensor(targets).view(-1)
            for stage in stages:
                x = stage(x)
            loss = lm_loss(x, y)
            loss.backward()
            step_loss += loss.item()
        norm = global_norm(params)
        scale = args.clip_grad_norm / norm if 0 < args.clip_grad_norm < norm else 1.0
        optimizer.step(step, scale)
        millis = 1000 * (time.perf_counter() - start)
        print(f"step {step}: loss {step_loss:.9g} ({step_loss.hex()}), {millis:.3f} ms, "
              f"{tokens_per_step / (millis / 1000):.0f} tokens/s, grad norm {norm:.6g}", flush=True)


if __name__ == "__main__":
    main()
