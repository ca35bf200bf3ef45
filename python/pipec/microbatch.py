"""Splitting a step's batch into M micro-batches along dimension 0.

Tensors anywhere in the arguments (positional, keyword, nested in tuples,
lists and dicts) are split into M equal parts; anything else is passed to
every micro-batch unchanged.  A tensor whose first dimension is not a
multiple of M is an error naming it, so no micro-batch is silently smaller.

With the schedule's per-micro-batch ``sizes`` (s_0, ..., s_{M-1}), micro-batch
i takes s_i / sum(s) of the rows instead: the rows must be a multiple of
sum(s), and one size unit is rows / sum(s) rows.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import torch


def split(value: Any, count: int, device, where: str,
          sizes: Optional[Sequence[int]] = None) -> List[Any]:
    """`value` split into `count` micro-batches (tensors moved to `device`), of the
    relative `sizes` when given."""
    if isinstance(value, torch.Tensor):
        if value.dim() == 0:
            raise ValueError(f"{where} is a 0-d tensor; batches are split along dimension 0")
        if sizes:
            total = sum(sizes)
            if value.shape[0] % total:
                raise ValueError(f"{where} has {value.shape[0]} rows, which do not split into "
                                 f"micro-batches of sizes {list(sizes)}: the rows must be a "
                                 f"multiple of {total}")
            unit = value.shape[0] // total
            return [part.to(device) for part in value.split([s * unit for s in sizes], dim=0)]
        if value.shape[0] % count:
            raise ValueError(f"{where} has {value.shape[0]} rows, which do not split into "
                             f"{count} equal micro-batches")
        return [part.to(device) for part in value.tensor_split(count, dim=0)]
    if isinstance(value, (tuple, list)):
        parts = [split(v, count, device, f"{where}[{i}]", sizes) for i, v in enumerate(value)]
        return [type(value)(p[i] for p in parts) for i in range(count)]
    if isinstance(value, dict):
        parts = {k: split(v, count, device, f"{where}[{k!r}]", sizes) for k, v in value.items()}
        return [{k: p[i] for k, p in parts.items()} for i in range(count)]
    return [value] * count
