"""How BPipe's transfers carry a (stage, micro-batch)'s saved tensors between
ranks: an evicted message (the owner's Evict to the partner's Hold) and a
returned one (the partner's Return to the owner's Load).

What autograd saved for a stage's forward is any number of tensors of any
dtypes and shapes, so, unlike a stage's outputs (wire.py), every such message
travels with a description and the receiver never guesses:

  1. a fixed int64 header of ``HEAD_LEN`` words: magic, message id, the
     activation's identity (owner rank, stage, micro-batch), the tensor count
     and the length of the description, then the description itself (per
     tensor its dtype code and shape) when it fits (``INLINE`` words);
  2. only when it does not fit, the description as a message of its own;
  3. the tensors of at least one element, in order, each contiguous.
One header round trip before the tensors' receives can be posted, two for a
stage that saves very many tensors.

Zero-size tensors travel in the description only and are rebuilt empty with
their shape. The identity travels with the tensors (a Hold keeps the one it
received and its Return sends it back), so a Load that is handed some other
activation's tensors, or a Hold that receives the wrong message, is refused
naming both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import torch

from .wire import _CODE, DTYPES

HEAD_LEN = 256
_FIXED = 7
INLINE = HEAD_LEN - _FIXED  # description words that travel in the header
_MAGIC = 0x62706970  # "bpip"

Identity = Tuple[int, int, int]  # (owner rank, stage, micro-batch)


@dataclass(frozen=True)
class SavedMeta:
    dtype: torch.dtype
    shape: Tuple[int, ...]

    def describe(self) -> str:
        return f"{tuple(self.shape)} {str(self.dtype).replace('torch.', '')}"


def describe_identity(ident: Identity) -> str:
    owner, stage, mb = ident
    return f"rank {owner}'s stage {stage}, micro-batch {mb}"


def metas_of_saved(tensors: Sequence[torch.Tensor]) -> List[SavedMeta]:
    out = []
    for t in tensors:
        if t.dtype not in _CODE:
            raise TypeError(f"a saved tensor of dtype {t.dtype} cannot be sent to another rank")
        out.append(SavedMeta(t.dtype, tuple(t.shape)))
    return out


def encode(message_id: int, ident: Identity, metas: Sequence[SavedMeta],
           device) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """The header, and the description when it does not fit the header (else None)."""
    words: List[int] = []
    for m in metas:
        words += [_CODE[m.dtype], len(m.shape), *m.shape]
    head = torch.zeros(HEAD_LEN, dtype=torch.int64)
    head[:_FIXED] = torch.tensor([_MAGIC, message_id, *ident, len(metas), len(words)],
                                 dtype=torch.int64)
    if len(words) <= INLINE:
        if words:
            head[_FIXED:_FIXED + len(words)] = torch.tensor(words, dtype=torch.int64)
        return head.to(device), None
    return head.to(device), torch.tensor(words, dtype=torch.int64).to(device)


def decode_head(head: torch.Tensor) -> Tuple[int, Identity, int, int, Optional[torch.Tensor]]:
    """(message id, identity, tensor count, description length, the description if
    inline else None), or ValueError."""
    words = head.tolist()
    if len(words) != HEAD_LEN or words[0] != _MAGIC:
        raise ValueError("the saved tensors' header is corrupt (the peer runs another "
                         "program or pipec version)")
    length = words[6]
    inline = head[_FIXED:_FIXED + length] if length <= INLINE else None
    return words[1], (words[2], words[3], words[4]), words[5], length, inline


def decode_description(description: torch.Tensor, count: int) -> List[SavedMeta]:
    words = description.tolist()
    metas, at = [], 0
    try:
        for _ in range(count):
            code, ndim = words[at], words[at + 1]
            metas.append(SavedMeta(DTYPES[code], tuple(words[at + 2: at + 2 + ndim])))
            at += 2 + ndim
    except IndexError:
        raise ValueError("the saved tensors' description is truncated") from None
    return metas


def nonempty(tensors: Sequence[torch.Tensor]) -> List[torch.Tensor]:
    """What travels after the description: the tensors with at least one element."""
    return [t for t in tensors if t.numel() > 0]


def restore_layout(tensor: torch.Tensor, stride: Tuple[int, ...]) -> torch.Tensor:
    """A received (contiguous) tensor with the strides the evicted one had, when those
    describe a dense, non-overlapping layout (what Tensor.clone keeps) or the tensor
    has no elements (any strides hold none); otherwise as is."""
    if tuple(tensor.stride()) == tuple(stride):
        return tensor
    if tensor.numel() == 0:
        return torch.empty_strided(tuple(tensor.shape), stride, dtype=tensor.dtype,
                                   device=tensor.device)
    if not _dense(tuple(tensor.shape), stride):
        return tensor
    out = torch.empty_strided(tuple(tensor.shape), stride, dtype=tensor.dtype,
                              device=tensor.device)
    out.copy_(tensor)
    return out


def _dense(shape: Tuple[int, ...], stride: Tuple[int, ...]) -> bool:
    expected = 1
    for size, step in sorted(zip(shape, stride), key=lambda d: (d[1], d[0])):
        if size == 1:
            continue
        if step != expected:
            return False
        expected *= size
    return len(shape) == len(stride)
