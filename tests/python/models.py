"""Test stages that exercise what real models do between stages: keyword
arguments on the first stage (``forward(self, x, mask=None, **kw)``, which
TorchScript refuses), a tuple of tensors between stages with an integer mask
that carries no gradient, and a last stage returning one tensor.

Every stage's parameters come from a generator seeded with the stage number,
so stage_fn is deterministic and copies start identical.
"""

from __future__ import annotations

import torch
from torch import nn

HIDDEN = 8
AUX = 3


class Stage(nn.Module):
    def __init__(self, stage: int, num_stages: int, dtype=torch.float64):
        super().__init__()
        gen = torch.Generator().manual_seed(1000 + stage)
        self.first = stage == 0
        self.last = stage == num_stages - 1
        self.fc = nn.Linear(HIDDEN, HIDDEN, dtype=dtype)
        self.proj = nn.Linear(HIDDEN, AUX, dtype=dtype)
        self.back = nn.Linear(AUX, HIDDEN, dtype=dtype)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=gen, dtype=dtype) * 0.5)

    def forward(self, x, z=None, mask=None, **kw):
        if self.first:  # called as stage(x, mask=mask, scale=...)
            z = torch.zeros(x.shape[0], AUX, dtype=x.dtype, device=x.device)
            x = x * kw.get("scale", 1.0)
        h = torch.tanh(self.fc(x)) * (1 + 0.1 * mask.unsqueeze(1).to(x.dtype))
        z2 = z + torch.sigmoid(self.proj(h))
        y = h + self.back(z)
        if self.last:
            return y + z2.sum(dim=1, keepdim=True)
        return y, z2, mask


def stage_fn_for(num_stages: int, dtype=torch.float64):
    return lambda s: Stage(s, num_stages, dtype)


def loss_fn(output, target):
    return torch.nn.functional.mse_loss(output, target)


def batch(step: int, rows: int, dtype=torch.float64):
    gen = torch.Generator().manual_seed(7 + step)
    x = torch.randn(rows, HIDDEN, generator=gen, dtype=dtype)
    mask = torch.randint(0, 2, (rows,), generator=gen)
    target = torch.randn(rows, HIDDEN, generator=gen, dtype=dtype)
    return x, mask, target


def reference_step(stages, x, mask, target, M: int, scale: float = 1.0, whole: bool = False):
    """Single-process PyTorch: the same modules over the same micro-batches;
    backward of the mean of the M micro-batch losses. With `whole` (schedules
    with micro-batches of declared sizes) the whole batch at once: the mean
    over its samples (the stages treat rows independently)."""
    if whole:
        out = stages[0](x, mask=mask, scale=scale)
        for stage in stages[1:]:
            out = stage(*out)
        loss = loss_fn(out, target)
        loss.backward()
        return loss.detach()
    losses = []
    for xs, ms, ts in zip(x.tensor_split(M), mask.tensor_split(M), target.tensor_split(M)):
        out = stages[0](xs, mask=ms, scale=scale)
        for stage in stages[1:]:
            out = stage(*out)
        losses.append(loss_fn(out, ts))
    loss = torch.stack(losses).mean()
    loss.backward()
    return loss.detach()
