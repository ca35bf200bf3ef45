"""BPipe's Evict / Hold / Return / Load in the PyTorch runtime.

In one process, against the same forward and backward without them
(python/pipec/activations.py and saved_wire.py, the wire format round-tripped
without torch.distributed):
  - Evict empties every movable holder (the device tensors let go, parameters
    and stage inputs stay) and the micro-batch stops counting as live; a Hold
    counts on the partner until its Return; Load refills the holders;
  - gradients after Evict, the wire (header, description, contiguous tensors)
    and Load equal the plain run's bit for bit (fp64), for B and for I then W,
    with a non-contiguous saved tensor (its strides restored) and zero-size
    saved tensors (rebuilt from the description);
  - a Load of tensors that are not the evicted ones (count, shape, dtype) and
    a corrupt header are refused, naming what differs.
In four gloo processes (worker_bpipe.py, examples/bpipe.pipe at P = 4, M = 8):
  - plain: bit for bit equal to the same order without the transfers, rank 0
    evicting 6 micro-batches (zero-size tensors among what moves);
  - negative controls: Returns that hand back another micro-batch (with its
    identity) are refused by the owner's Load naming both; ones that send another
    micro-batch's tensors under the right identity make the gradients differ
    from the twin's, which is what the memory suite's bit-for-bit check catches.

    test_bpipe.py   (the torch environment's Python; $PIPEC: the compiler)
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

import launcher  # noqa: E402
import models  # noqa: E402
from pipec import saved_wire  # noqa: E402
from pipec.activations import ActivationTracker, LoadMismatch  # noqa: E402
from pipec.splitbackward import input_half, weight_half  # noqa: E402

FAILURES = []


def check(ok: bool, what: str) -> None:
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


class OddStage(models.Stage):
    """models.Stage that also saves a transposed (non-contiguous) activation and
    zero-size views; both add exactly 0 to the output."""

    def forward(self, x, z=None, mask=None, **kw):
        y, z2, m = super().forward(x, z, mask, **kw)
        t = torch.tanh(y).t()                      # non-contiguous; mul saves it
        extra = (t * t).sum() * 0
        e = torch.sigmoid(y)[:, :0]                # zero-size views; mul saves both
        return y + extra + (e * e).sum(), z2, m


def inputs():
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(6, models.HIDDEN, generator=gen, dtype=torch.float64).requires_grad_(True)
    z = torch.randn(6, models.AUX, generator=gen, dtype=torch.float64).requires_grad_(True)
    mask = torch.randint(0, 2, (6,), generator=gen)
    dy = torch.randn(6, models.HIDDEN, generator=gen, dtype=torch.float64)
    dz = torch.randn(6, models.AUX, generator=gen, dtype=torch.float64)
    return x, z, mask, dy, dz


def over_the_wire(tensors, ident):
    """What the partner receives and sends back: the transport's encoding and
    buffers, without torch.distributed (each tensor copied as a send would)."""
    metas = saved_wire.metas_of_saved(tensors)
    head, description = saved_wire.encode(41, ident, metas, "cpu")
    mid, got_ident, count, length, inline = saved_wire.decode_head(head)
    assert (mid, got_ident, count) == (41, ident, len(tensors))
    assert (inline is None) == (description is not None)
    description = inline if inline is not None else description
    assert len(description) == length
    got = saved_wire.decode_description(description, count)
    buffers = [torch.empty(m.shape, dtype=m.dtype) for m in got]
    body = saved_wire.nonempty([t.contiguous() for t in tensors])
    for buf, t in zip(saved_wire.nonempty(buffers), body):
        buf.copy_(t)
    return buffers


def run(module, evict: bool, split: bool):
    owner, partner = ActivationTracker(), ActivationTracker()
    key = (0, 3)
    x, z, mask, dy, dz = inputs()
    owner.records[key] = object()  # the executor's record, as in _forward
    with owner.saving(key):
        y, z2, _ = module(x, z, mask=mask)
    seen = {"live_before": owner.live()}
    if evict:
        holders = owner._holders(key)
        movable = [h for h in holders if not h.parameter]
        old = [weakref.ref(h.tensor) for h in movable]
        strides = [h.tensor.stride() for h in movable]
        seen["strided"] = any(not h.tensor.is_contiguous() for h in movable)
        seen["empty"] = sum(1 for h in movable if h.tensor.numel() == 0)
        tensors = owner.evict(key)
        seen["moved"] = (len(tensors), len(movable))
        seen["live_evicted"] = owner.live()
        seen["emptied"] = all(h.tensor is None and h.away for h in movable)
        seen["stayed"] = all(h.tensor is not None for h in holders if h.parameter)
        ident = (0, 0, 3)
        received = over_the_wire(tensors, ident)
        del tensors
        seen["let_go"] = all(ref() is None for ref in old)
        partner.hold(ident, received, ident)
        seen["partner_live"] = partner.live()
        sent_as, back = partner.give_back(ident)
        seen["partner_after"] = partner.live()
        seen["loaded"] = owner.load(key, over_the_wire(back, sent_as))
        seen["live_after"] = owner.live()
        seen["layout"] = all(h.tensor.stride() == s for h, s in zip(movable, strides))
    params = list(module.parameters())
    if split:
        input_grads, state = input_half([y, z2], [dy, dz], [x, z], params)
        weight_half(state, params)
    else:
        torch.autograd.backward([y, z2], [dy, dz])
        input_grads = [x.grad, z.grad]
    return list(input_grads) + [p.grad for p in params], seen


def unit_tests() -> None:
    base = OddStage(1, 3)
    for split in (False, True):
        name = "I then W" if split else "B"
        plain, _ = run(copy.deepcopy(base), False, split)
        moved, seen = run(copy.deepcopy(base), True, split)
        check(seen["live_before"] == 1 and seen["live_evicted"] == 0 and seen["live_after"] == 1,
              f"{name}: owner live 1, 0 after the Evict, 1 after the Load: {seen}")
        check(seen["partner_live"] == 1 and seen["partner_after"] == 0,
              f"{name}: the partner counts it from the Hold until the Return")
        check(seen["moved"][0] == seen["moved"][1] > 0 and seen["loaded"] == seen["moved"][0],
              f"{name}: every movable holder evicted and loaded ({seen['moved']})")
        check(seen["emptied"] and seen["let_go"] and seen["stayed"],
              f"{name}: holders emptied, the tensors let go, parameters and inputs stay")
        check(seen["layout"], f"{name}: every loaded tensor has its evicted strides")
        check(seen["strided"] and seen["empty"] >= 2,
              f"{name}: a non-contiguous and {seen['empty']} zero-size saved tensors moved")
        same = all(a is not None and torch.equal(a, b) for a, b in zip(plain, moved))
        check(same, f"{name}: input and parameter gradients equal the plain run's bit for bit")

    # Strides come back as they were.
    t = torch.arange(12.0).reshape(3, 4).t()
    back = saved_wire.restore_layout(t.contiguous(), tuple(t.stride()))
    check(back.stride() == t.stride() and torch.equal(back, t), "a transposed tensor's strides restored")
    e = torch.empty(4, 0, 3)
    check(tuple(over_the_wire([e], (1, 2, 3))[0].shape) == (4, 0, 3), "a 4x0x3 tensor keeps its shape")
    # More tensors than the header's description fits: a description of its own.
    many = [torch.full((i % 3, 2, i), float(i), dtype=torch.float64) for i in range(80)]
    _, description = saved_wire.encode(0, (0, 0, 0), saved_wire.metas_of_saved(many), "cpu")
    back = over_the_wire(many, (0, 1, 2))
    check(description is not None and all(a.shape == b.shape and torch.equal(a, b)
                                          for a, b in zip(many, back)),
          "80 saved tensors (a description of its own) come back equal")

    # Loads of other tensors are refused, naming what differs.
    tracker = ActivationTracker()
    key = (0, 0)
    tracker.records[key] = object()
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    with tracker.saving(key):
        y = torch.tanh(x * 2)
    tensors = tracker.evict(key)
    for bad, wanted in (([], "came back"), (tensors + tensors, "came back"),
                        ([t[:1] for t in tensors], "came back as (1, 3)"),
                        ([t.float() for t in tensors], "float32")):
        try:
            tracker.load(key, bad)
            check(False, f"a Load of other tensors is refused ({wanted})")
        except LoadMismatch as error:
            check(wanted in str(error), f"a Load of other tensors is refused: {error}")
    tracker.load(key, tensors)
    y.sum().backward()
    try:
        tracker.load(key, tensors)
        check(False, "a second Load is refused")
    except LoadMismatch as error:
        check("nothing of it was evicted" in str(error), f"a second Load is refused: {error}")
    head, _ = saved_wire.encode(0, (0, 0, 0), [], "cpu")
    head[0] = 7
    try:
        saved_wire.decode_head(head)
        check(False, "a corrupt header is refused")
    except ValueError as error:
        check("corrupt" in str(error), f"a corrupt header is refused: {error}")


def process_tests() -> None:
    worker = os.path.join(HERE, "worker_bpipe.py")
    wanted = {"plain": "RESULT SAME", "swap-identity": "RESULT REFUSED",
              "swap-tensors": "RESULT DIFFERS"}
    for mode, result in wanted.items():
        results = launcher.launch(4, 120, [worker, mode])
        rank0 = results[0][1]
        lines = [line for line in rank0.splitlines() if line.startswith(("RESULT", "MEASURED"))]
        ok = results[0][0] == 0 and any(line.startswith(result) for line in lines)
        if mode == "plain":
            ok = ok and all(code == 0 and "RESULT SAME" in out for code, out in results)
        if mode == "swap-identity":
            ok = ok and any("Load of micro-batch 3" in line and "sent rank 0's stage 0, "
                            "micro-batch 2 as message" in line and "not rank 0's stage 0, "
                            "micro-batch 3" in line for line in lines)
        check(ok, f"4 processes, {mode}: rank 0 {' | '.join(lines) or rank0[-2000:]}")
        if not ok:
            for rank, (code, out) in enumerate(results):
                print(f"===== rank {rank} (exit {code}) =====\n{out[-3000:]}")


def main() -> int:
    torch.set_num_threads(1)
    unit_tests()
    process_tests()
    print(f"{len(FAILURES)} failures")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
