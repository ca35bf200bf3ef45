"""Offload and Reload in the PyTorch runtime's ActivationTracker
(python/pipec/activations.py), in one process, against the same forward and
backward without them:

  - the offload replaces every holder autograd saved for the micro-batch with a
    copy (a new buffer) and lets go of the device tensor it had (its object is
    gone), leaving the stage's parameters and input leaves in place;
  - the micro-batch counts as live before, not after the offload, and again
    after the reload;
  - input and parameter gradients after the reload equal those of the plain
    run bit for bit (fp64), for a whole backward and for the split I then W;
  - offloading twice moves nothing more, and reloading a micro-batch that was
    not offloaded is refused by the executor (checked in the memory suite).

    test_offload.py   (the torch environment's Python)
"""

from __future__ import annotations

import copy
import os
import sys
import weakref

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import models  # noqa: E402
from pipec.activations import ActivationTracker  # noqa: E402
from pipec.splitbackward import input_half, weight_half  # noqa: E402

FAILURES = []


def check(ok: bool, what: str) -> None:
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def inputs():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(5, models.HIDDEN, generator=gen, dtype=torch.float64).requires_grad_(True)
    z = torch.randn(5, models.AUX, generator=gen, dtype=torch.float64).requires_grad_(True)
    mask = torch.randint(0, 2, (5,), generator=gen)
    dy = torch.randn(5, models.HIDDEN, generator=gen, dtype=torch.float64)
    dz = torch.randn(5, models.AUX, generator=gen, dtype=torch.float64)
    return x, z, mask, dy, dz


def run(module, offload: bool, split: bool):
    """Forward, (offload, reload), backward; the gradients and what was seen."""
    tracker = ActivationTracker()
    key = (0, 0)
    x, z, mask, dy, dz = inputs()
    tracker.records[key] = object()  # the executor's record, as in _forward
    with tracker.saving(key):
        y, z2, _ = module(x, z, mask=mask)
    seen = {"live_before": tracker.live()}
    if offload:
        holders = tracker._holders(key)
        old = [(h, weakref.ref(h.tensor), h.tensor.data_ptr()) for h in holders if not h.parameter]
        seen["movable"] = len(old)
        seen["moved"] = tracker.offload(key, lambda t: t.clone())
        seen["live_offloaded"] = tracker.live()
        seen["copies"] = all(h.on_host and h.tensor.data_ptr() != ptr for h, _, ptr in old)
        seen["let_go"] = all(ref() is None for _, ref, _ in old)
        seen["again"] = tracker.offload(key, lambda t: t.clone())
        seen["stayed"] = all(not h.on_host for h in holders if h.parameter)
        seen["reloaded"] = tracker.reload(key, lambda t: t.clone())
        seen["live_after"] = tracker.live()
    params = list(module.parameters())
    if split:
        input_grads, state = input_half([y, z2], [dy, dz], [x, z], params)
        weight_half(state, params)
    else:
        torch.autograd.backward([y, z2], [dy, dz])
        input_grads = [x.grad, z.grad]
    grads = list(input_grads) + [p.grad for p in params]
    return grads, seen


def main() -> int:
    base = models.Stage(1, 3)
    for split in (False, True):
        name = "I then W" if split else "B"
        plain, _ = run(copy.deepcopy(base), False, split)
        moved, seen = run(copy.deepcopy(base), True, split)
        check(seen["live_before"] == 1 and seen["live_offloaded"] == 0 and seen["live_after"] == 1,
              f"{name}: live 1, 0 after the offload, 1 after the reload: {seen}")
        check(seen["movable"] > 0 and seen["moved"] == seen["movable"],
              f"{name}: every saved activation moved ({seen['moved']} of {seen['movable']})")
        check(seen["copies"] and seen["let_go"],
              f"{name}: host copies in new buffers, the device tensors let go")
        check(seen["again"] == 0 and seen["stayed"], f"{name}: nothing moves twice; leaves stay")
        check(seen["reloaded"] == seen["moved"], f"{name}: every copy came back")
        same = all(a is not None and torch.equal(a, b) for a, b in zip(plain, moved))
        check(same, f"{name}: input and parameter gradients equal the plain run's bit for bit")
    print(f"{len(FAILURES)} failures")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
