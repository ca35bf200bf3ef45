"""An overlap function with DeepSeek DualPipe's signature that forces the two
halves of an overlap pair to interleave: the forward runs on the calling
thread, the backward on a second one, and they hand a baton back and forth at
every submodule of the forward (forward pre-hooks) and every parameter
gradient of the backward (tensor hooks), so the halves alternate piece by
piece.  ``SWITCHES`` counts the hand-overs, so a test can show interleaving
really happened.
"""

from __future__ import annotations

import threading

import torch

SWITCHES = 0
_WAIT_S = 60


class _Baton:
    def __init__(self):
        self.cv = threading.Condition()
        self.turn = "F"
        self.done = set()

    def pass_to(self, me: str, other: str) -> None:
        global SWITCHES
        with self.cv:
            if other in self.done:
                return
            self.turn = other
            SWITCHES += 1
            self.cv.notify_all()
            if not self.cv.wait_for(lambda: self.turn == me or other in self.done, timeout=_WAIT_S):
                raise RuntimeError("overlap test: the other half never handed the baton back")

    def wait_turn(self, me: str, other: str) -> None:
        with self.cv:
            self.cv.wait_for(lambda: self.turn == me or other in self.done, timeout=_WAIT_S)

    def finish(self, me: str, other: str) -> None:
        with self.cv:
            self.done.add(me)
            self.turn = other
            self.cv.notify_all()


def interleaving_overlap(module0, inputs0, criterion0, labels0, module1, loss1, outputs1,
                         output_grads1):
    baton = _Baton()
    failure = []
    handles = []
    target0 = getattr(module0, "func", module0)  # functools.partial on stage 0
    for child in target0.children():
        handles.append(child.register_forward_pre_hook(lambda *_: baton.pass_to("F", "B")))
    for p in module1.parameters():
        if p.requires_grad:
            handles.append(p.register_hook(lambda g: (baton.pass_to("B", "F"), g)[1]))

    def backward_half():
        try:
            baton.wait_turn("B", "F")
            if loss1 is not None:
                loss1.backward()
            else:
                torch.autograd.backward(outputs1, output_grads1)
        except BaseException as error:  # re-raised on the calling thread
            failure.append(error)
        finally:
            baton.finish("B", "F")

    thread = threading.Thread(target=backward_half)
    thread.start()
    try:
        outputs0 = module0(*inputs0)
        loss0 = None
        if criterion0 is not None:
            outs = [outputs0] if isinstance(outputs0, torch.Tensor) else list(outputs0)
            loss0 = criterion0(*outs, *labels0)
    finally:
        baton.finish("F", "B")
        thread.join()
        for h in handles:
            h.remove()
    if failure:
        raise failure[0]
    return outputs0, loss0
