"""Overlap pairs: the forward of one chunk and the backward of another, run as
one step so that each hides the other's communication (DeepSeek-V3's DualPipe).

How the two halves run, first match wins:
  1. ``overlap_fn`` given to the Pipeline, or
  2. an ``overlapped_forward_backward`` classmethod on the stage modules' class
     (both halves' modules of that class), DeepSeek's own convention.
     Either is called as DeepSeek's DualPipe calls it::

         outputs0, loss0 = fn(module0, inputs0, criterion0, labels0,
                              module1, loss1, outputs1, output_grads1)

     It must run ``module0(*inputs0)`` (and ``criterion0(*outputs0, *labels0)``
     where ``criterion0`` is not None, on the last stage) and the backward of
     the other half: ``loss1.backward()`` where ``loss1`` is not None, else
     ``torch.autograd.backward(outputs1, output_grads1)``, interleaving them as
     it likes (the user's module decides where its all-to-alls go).  On stage 0,
     ``module0`` is the module with the step's keyword arguments bound
     (functools.partial) when there are any.
  3. On CUDA, the forward half runs on a second stream while the backward half
     runs on the current one (each half's kernels are queued back to back, and
     the GPU runs the two streams concurrently); events order both against the
     surrounding ops.
  4. On CPU, the halves run one after the other, forward first: the CPU has no
     streams, and PyTorch's CPU kernels already use every core, so threads would
     only contend.  A user function (1, 2) may still interleave them, with
     threads or by splitting the modules.

Whatever runs the halves, the executor does the bookkeeping around them:
inputs, the loss, sending both halves' results and freeing the backward's
activations, and samples the live activations once with both halves' records
present (the memory check's rule: in a pair the forward allocates before the
backward frees).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import torch

from .errors import PipelineError
from .wire import as_tensors, metas_of

if TYPE_CHECKING:
    from .executor import Executor
    from .program import Op


def _user_function(executor: "Executor", forward: "Op", backward: "Op"):
    if executor.overlap_fn is not None:
        return executor.overlap_fn
    m0, m1 = executor.modules[forward.chunk], executor.modules[backward.chunk]
    fn = getattr(type(m0), "overlapped_forward_backward", None)
    if fn is not None and type(m0) is type(m1):
        return fn
    return None


def run_pair(executor: "Executor", forward: "Op", backward: "Op", received, outgoing) -> None:
    from .executor import Record

    fn = _user_function(executor, forward, backward)
    tracker = executor.tracker
    # The backward half's inputs.
    executor._reloaded(backward)  # an offloaded activation is back first
    bkey = (backward.chunk, backward.mb)
    brecord: Record = tracker.records[bkey]
    grads = executor._output_grads(backward, received, brecord)
    roots, root_grads = executor._roots(brecord, grads)
    wanted = [t for t in brecord.inputs if t.requires_grad]

    if fn is None:
        _run_default(executor, forward, received, outgoing, roots, root_grads)
    else:
        _run_user(executor, fn, forward, received, outgoing, brecord, roots, root_grads)
    tracker.sample()  # both halves' records present: the pair's peak
    del tracker.records[bkey]
    executor._deliver_backward(backward, brecord, wanted, [t.grad for t in wanted], outgoing)
    tracker.sample()


def _backward_half(roots, root_grads) -> None:
    if roots and any(r.requires_grad for r in roots):
        torch.autograd.backward(roots, root_grads)


def _run_default(executor, forward, received, outgoing, roots, root_grads) -> None:
    if executor.device.type == "cuda":
        current = torch.cuda.current_stream(executor.device)
        if executor._side_stream is None:
            executor._side_stream = torch.cuda.Stream(executor.device)
        side = executor._side_stream
        side.wait_stream(current)
        with torch.cuda.stream(side):
            executor._run_op(forward, received, outgoing)
        _backward_half(roots, root_grads)
        current.wait_stream(side)
    else:
        executor._run_op(forward, received, outgoing)
        _backward_half(roots, root_grads)


def _run_user(executor, fn, forward, received, outgoing, brecord, roots, root_grads) -> None:
    from .executor import Record

    args, kwargs, leaves, source = executor._stage_inputs(forward, received)
    module0 = executor.modules[forward.chunk]
    if kwargs:
        module0 = functools.partial(module0, **kwargs)
    key = (forward.chunk, forward.mb)
    record = Record(leaves)
    executor.tracker.records[key] = record
    last = forward.stage == executor.last_stage
    raw = []

    def criterion0(*outputs_and_target):
        # DeepSeek calls criterion0(*outputs0, *labels0); labels0 is [target].
        outputs, target = outputs_and_target[:-1], outputs_and_target[-1]
        loss = executor.loss_fn(outputs[0] if len(outputs) == 1 else tuple(outputs), target)
        raw.append(loss.detach().reshape(()))
        return loss.reshape(()) * executor.scales[forward.mb]

    loss1 = brecord.loss
    outputs1 = None if loss1 is not None else list(roots)
    grads1 = None if loss1 is not None else list(root_grads)
    with executor.tracker.saving(key):
        outputs0, loss0 = fn(module0, args, criterion0 if last else None,
                             [executor.data.targets[forward.mb]] if last else None,
                             executor.modules[executor.me.ops[forward.index + 1].chunk],
                             loss1, outputs1, grads1)
    if last:
        if loss0 is None or not raw:
            raise PipelineError(f"{executor._where(forward)}: the overlap function returned no "
                                "loss for the last stage's forward (it must call criterion0)")
        executor.losses.append(executor._weighted(raw[-1], forward.mb))
        record.loss = loss0
        return
    outs = as_tensors(outputs0, f"stage {forward.stage} (through the overlap function)")
    metas = metas_of(outs)
    record.outputs = [o for o, m in zip(outs, metas) if m.grad]
    executor._deliver_forward(forward, outs, metas, outgoing)
