"""How a stage's output travels to the next stage's rank.

A stage returns a tensor or a tuple (or list) of tensors.  The receiving rank
must allocate buffers of the right shape and dtype before it posts its
receives, so the sender first sends a header: one int64 tensor of fixed size
(``HEADER_LEN``) listing, per tensor, its dtype, whether it carries a gradient,
and its shape.  With ``static_shapes=True`` (the default) a header travels only
with the first message of each (channel, stage) and both ends reuse it after
that, as PyTorch's schedules reuse their first step's shapes; a stage whose
output changes shape later is an error naming it.  ``static_shapes=False``
sends a header with every message.

Gradients travel back without a header: they have the shapes of the
activations they belong to, for the tensors marked as carrying a gradient
(floating-point tensors that require one).  Integer tensors (masks, token ids)
pass forward and get no gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Tuple

import torch

HEADER_LEN = 256
_MAGIC = 0x70697065  # "pipe"

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
          torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64,
          torch.complex128]
_CODE = {dtype: i for i, dtype in enumerate(DTYPES)}


@dataclass(frozen=True)
class TensorMeta:
    dtype: torch.dtype
    grad: bool  # carries a gradient back
    shape: Tuple[int, ...]

    def describe(self) -> str:
        return f"{tuple(self.shape)} {str(self.dtype).replace('torch.', '')}"


def describe(metas: Sequence[TensorMeta]) -> str:
    return "(" + ", ".join(m.describe() for m in metas) + ")"


def as_tensors(value, what: str) -> Tuple[torch.Tensor, ...]:
    """A stage's output as a tuple of tensors, or a clear error."""
    if isinstance(value, torch.Tensor):
        return (value,)
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return tuple(value)
    kinds = type(value).__name__ if not isinstance(value, (tuple, list)) else \
        f"{type(value).__name__} of ({', '.join(type(v).__name__ for v in value)})"
    raise TypeError(f"{what} returned a {kinds}; a stage that feeds another stage returns a "
                    "tensor or a tuple of tensors")


def metas_of(tensors: Sequence[torch.Tensor]) -> List[TensorMeta]:
    out = []
    for t in tensors:
        if t.dtype not in _CODE:
            raise TypeError(f"tensors of dtype {t.dtype} cannot be sent between stages")
        out.append(TensorMeta(t.dtype, bool(t.requires_grad and t.is_floating_point()),
                              tuple(t.shape)))
    return out


def encode_header(metas: Sequence[TensorMeta], device) -> torch.Tensor:
    words = [_MAGIC, len(metas)]
    for m in metas:
        words += [_CODE[m.dtype], int(m.grad), len(m.shape), *m.shape]
    if len(words) > HEADER_LEN:
        raise ValueError(f"a stage output of {len(metas)} tensors with these ranks does not fit "
                         f"the {HEADER_LEN}-word header; pass fewer tensors between stages")
    header = torch.zeros(HEADER_LEN, dtype=torch.int64)
    header[: len(words)] = torch.tensor(words, dtype=torch.int64)
    return header.to(device)


def decode_header(header: torch.Tensor) -> List[TensorMeta]:
    words = header.tolist()
    if words[0] != _MAGIC:
        raise ValueError("the message header is corrupt (the peer runs another program or "
                         "pipec version)")
    metas, at = [], 2
    for _ in range(words[1]):
        code, grad, ndim = words[at], words[at + 1], words[at + 2]
        metas.append(TensorMeta(DTYPES[code], bool(grad), tuple(words[at + 3: at + 3 + ndim])))
        at += 3 + ndim
    return metas


def empty_like_metas(metas: Sequence[TensorMeta], device) -> List[torch.Tensor]:
    return [torch.empty(m.shape, dtype=m.dtype, device=device) for m in metas]
