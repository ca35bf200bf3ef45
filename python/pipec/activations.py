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

Offload and Reload move a micro-batch's saved tensors out of device memory and
back (``offload``, ``reload``): each live holder's tensor is replaced by a host
copy, so the device's is freed once autograd's holder was its last reference,
and by a device copy on the way back; autograd unpacks whatever the holder has
then. Leaves that autograd saves stay (parameters, and the stage inputs the
executor's record holds anyway: moving them would free nothing). While a
holder has its host copy it does not count: an offloaded micro-batch is live
only if a holder of it still has a device tensor.

BPipe's transfers use the same holders. Evict (``evict``) takes the movable
holders' tensors out for the partner rank, leaving the holders empty (the
device tensors go with the transport's send buffers), and remembers each
holder's dtype, shape and strides; Load (``load``) puts the tensors the partner
sent back into those holders, refusing any that do not match. On the partner a
Hold keeps the received tensors (``hold``) and they count as live there, under
the owner's micro-batch, until its Return hands them back (``give_back``).
The hooks are installed whenever the program moves activations, even with
tracking off, since the holders are what Offload and Evict move.
"""

from __future__ import annotations

import weakref
from contextlib import nullcontext
from typing import Callable, Dict, List, Optional, Tuple

import torch

from .saved_wire import Identity, restore_layout

Key = Tuple[int, int]  # (chunk, micro-batch)


class _Saved:
    __slots__ = ("tensor", "parameter", "on_host", "away", "__weakref__")

    def __init__(self, tensor, parameter: bool):
        self.tensor = tensor
        self.parameter = parameter  # a leaf that requires grad, or its view: never moved
        self.on_host = False        # the tensor is a host copy (Offload)
        self.away = False           # the tensor is on the partner rank (Evict): None here


class LoadMismatch(ValueError):
    """A Load was handed tensors that are not the ones its Evict sent."""


def _stays(tensor: torch.Tensor) -> bool:
    """A parameter, a stage input, or a view of one (weight.t()): not an activation."""
    base = tensor._base if tensor._base is not None else tensor
    return base.is_leaf and base.requires_grad


class ActivationTracker:
    def __init__(self, enabled: bool = True, size_of: Optional[Callable[[int], int]] = None,
                 moves: bool = False):
        self.enabled = enabled
        self.hooks = enabled or moves  # memory ops move the holders: they must exist
        self.size_of = size_of or (lambda mb: 1)  # micro-batch -> its size in units
        self.records: Dict[Key, object] = {}
        self._saved: Dict[Key, List[weakref.ref]] = {}
        self.offloaded = set()  # keys whose saved tensors are on the host
        # Evicted keys: per moved holder (its weak reference, dtype, shape, strides).
        self.evicted: Dict[Key, List[Tuple[weakref.ref, torch.dtype, Tuple, Tuple]]] = {}
        # A partner's activations between Hold and Return: (identity sent, tensors),
        # None while they arrive.
        self.held: Dict[Identity, Optional[Tuple[Identity, List[torch.Tensor]]]] = {}
        self.loading = set()  # evicted keys whose Load is posted: they count again
        self.samples: List[int] = []  # live count after each op (pairs: see executor)
        self.peak = 0

    def reset(self) -> None:
        self.records.clear()
        self._saved.clear()
        self.offloaded.clear()
        self.evicted.clear()
        self.held.clear()
        self.loading.clear()
        self.samples = []
        self.peak = 0

    def saving(self, key: Key):
        """Context for a forward: tracks what autograd saves for `key`."""
        if not self.hooks:
            return nullcontext()
        refs = self._saved.setdefault(key, [])

        def pack(tensor):
            # Detached (same storage and version counter, no copy): a saved output
            # held with its grad_fn would make a reference cycle through the graph
            # (output -> its node -> this holder -> output) that Python cannot see,
            # so the graph would be freed only by a backward that traverses it, never
            # by dropping it. Autograd reattaches the node on unpack, as it does for
            # torch.autograd.graph.save_on_cpu's fresh copies.
            holder = _Saved(tensor.detach(), _stays(tensor))
            refs.append(weakref.ref(holder))
            return holder

        def unpack(holder):
            return holder.tensor

        return torch.autograd.graph.saved_tensors_hooks(pack, unpack)

    def _holders(self, key: Key) -> List[_Saved]:
        return [h for h in (r() for r in self._saved.get(key, [])) if h is not None]

    def _moved(self, key: Key, to_host: bool, copy: Callable) -> int:
        """Every live, movable holder of `key` gets copy(tensor); returns how many."""
        moved = 0
        for holder in self._holders(key):
            if holder.parameter or holder.on_host == to_host:
                continue
            holder.tensor = copy(holder.tensor)
            holder.on_host = to_host
            moved += 1
        return moved

    def offload(self, key: Key, to_host: Callable) -> int:
        """Offload: `key`'s saved tensors replaced by to_host(tensor) copies."""
        self.offloaded.add(key)
        return self._moved(key, True, to_host)

    def reload(self, key: Key, to_device: Callable) -> int:
        """Reload: `key`'s host copies replaced by to_device(tensor) copies."""
        self.offloaded.discard(key)
        return self._moved(key, False, to_device)

    def evict(self, key: Key) -> List[torch.Tensor]:
        """Evict: `key`'s movable saved tensors, taken out of their holders (in the
        order autograd saved them) for the partner rank."""
        entries, tensors = [], []
        for holder in self._holders(key):
            if holder.parameter:
                continue
            t = holder.tensor
            entries.append((weakref.ref(holder), t.dtype, tuple(t.shape), tuple(t.stride())))
            tensors.append(t)
            holder.tensor = None
            holder.away = True
        self.evicted[key] = entries
        return tensors

    def load(self, key: Key, tensors: List[torch.Tensor]) -> int:
        """Load: the tensors the partner returned, back into `key`'s holders, each
        checked against what its Evict sent; returns how many holders got one."""
        entries = self.evicted.get(key)
        if entries is None:
            raise LoadMismatch("nothing of it was evicted")
        if len(tensors) != len(entries):
            raise LoadMismatch(f"{len(entries)} saved tensors were evicted, {len(tensors)} came back")
        for i, ((_, dtype, shape, _), t) in enumerate(zip(entries, tensors)):
            if (t.dtype, tuple(t.shape)) != (dtype, shape):
                raise LoadMismatch(f"saved tensor {i} was evicted as {shape} "
                                   f"{str(dtype).replace('torch.', '')} and came back as "
                                   f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}")
        del self.evicted[key]
        put = 0
        for (ref, _, _, stride), t in zip(entries, tensors):
            holder = ref()
            if holder is None:  # autograd let it go meanwhile: nothing to put back
                continue
            holder.tensor = restore_layout(t, stride)
            holder.away = False
            put += 1
        return put

    def hold(self, key: Identity, tensors: Optional[List[torch.Tensor]] = None,
             sent_as: Optional[Identity] = None) -> None:
        """Hold: a partner's activation key = (owner, stage, mb), kept until its
        Return, with the identity it travelled under (sent back with it). Without
        tensors it is arriving: it counts, and a second call gives its tensors."""
        if self.held.get(key) is not None or (tensors is None and key in self.held):
            raise ValueError("it is held already")
        self.held[key] = None if tensors is None else (sent_as, list(tensors))

    def give_back(self, key: Identity) -> Tuple[Identity, List[torch.Tensor]]:
        """Return: the held tensors and their identity, no longer kept here."""
        if self.held.get(key) is None:
            raise ValueError("it is not held here (no Hold before it)")
        return self.held.pop(key)

    def live(self) -> int:
        dead = []
        count = 0
        for key, refs in self._saved.items():
            holders = [r() for r in refs]
            if key in self.offloaded or (key in self.evicted and key not in self.loading):
                # live only while a device tensor is left
                on_device = any(h is not None and not h.on_host and not h.away and not h.parameter
                                for h in holders)
            else:
                on_device = key in self.records or any(h is not None for h in holders)
            if on_device:
                count += self.size_of(key[1])
            elif key not in self.records and all(h is None for h in holders):
                dead.append(key)
        for key in dead:
            del self._saved[key]
        count += sum(self.size_of(key[1]) for key in self.records
                     if key not in self._saved and key not in self.offloaded
                     and (key not in self.evicted or key in self.loading))
        count += sum(self.size_of(mb) for _, _, mb in self.held)  # a partner's, held here
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
