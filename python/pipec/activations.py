"""Which micro-batches' activations a rank holds, measured, to set against the
compiler's prediction (check/Memory.cpp: F stores, B frees, or W after I).

A (chunk, micro-batch) counts as live while the executor keeps its record
(stage inputs and outputs, for the backward) or while any tensor autograd
saved during its forward is still alive.  The second half is measured, not
bookkept: the forward runs under ``torch.autograd.graph.saved_tensors_hooks``
whose pack hook wraps each saved tensor in a small object and keeps only a
weak reference to it; autograd drops the object when it frees the graph (after
the backward, or after W once an I kept it).  So a graph kept alive by mistake
(an output stored by a module, a retain_graph left on) shows up as a count
above the prediction.

With per-micro-batch ``sizes`` a micro-batch of size k counts k (the
compiler's units). A recomputed forward (an F that an R replays) is counted
while it runs: the executor calls ``touch()`` before it drops that graph.
"""

from __future__ import annotations

import weakref
from contextlib import nullcontext
from typing import Callable, Dict, List, Optional, Tuple

import torch

Key = Tuple[int, int]  # (chunk, micro-batch)


class _Saved:
    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor):
        self.tensor = tensor


class ActivationTracker:
    def __init__(self, enabled: bool = True, size_of: Optional[Callable[[int], int]] = None):
        self.enabled = enabled
        self.size_of = size_of or (lambda mb: 1)  # micro-batch -> its size in units
        self.records: Dict[Key, object] = {}
        self._saved: Dict[Key, List[weakref.ref]] = {}
        self.samples: List[int] = []  # live count after each op (pairs: see executor)
        self.peak = 0

    def reset(self) -> None:
        self.records.clear()
        self._saved.clear()
        self.samples = []
        self.peak = 0

    def saving(self, key: Key):
        """Context for a forward: tracks what autograd saves for `key`."""
        if not self.enabled:
            return nullcontext()
        refs = self._saved.setdefault(key, [])

        def pack(tensor):
            # Detached (same storage and version counter, no copy): a saved output
            # held with its grad_fn would make a reference cycle through the graph
            # (output -> its node -> this holder -> output) that Python cannot see,
            # so the graph would be freed only by a backward that traverses it, never
            # by dropping it. Autograd reattaches the node on unpack, as it does for
            # torch.autograd.graph.save_on_cpu's fresh copies.
            holder = _Saved(tensor.detach())
            refs.append(weakref.ref(holder))
            return holder

        def unpack(holder):
            return holder.tensor

        return torch.autograd.graph.saved_tensors_hooks(pack, unpack)

    def live(self) -> int:
        dead = []
        count = 0
        for key, refs in self._saved.items():
            if key in self.records or any(r() is not None for r in refs):
                count += self.size_of(key[1])
            else:
                dead.append(key)
        for key in dead:
            del self._saved[key]
        count += sum(self.size_of(key[1]) for key in self.records if key not in self._saved)
        return count

    def touch(self) -> int:
        """The peak, raised to what is live now (not a sample after an op)."""
        value = self.live()
        self.peak = max(self.peak, value)
        return value

    def sample(self) -> int:
        value = self.live()
        self.samples.append(value)
        self.peak = max(self.peak, value)
        return value
