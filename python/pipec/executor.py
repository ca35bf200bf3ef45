"""Runs one rank's checked program for one training step.

Ops run in program order, step by step (a step is one op or an overlap pair).
Before a step the executor takes every message the step's ops need (posting
receives as the communication model says, transport.py); after it, it sends
what the step produced, in the rank's send order.  Between stages on the same
rank (V shapes, interleaving) outputs are handed over in memory.

  F  runs the stage with autograd; on a flow's last stage it also runs the
     loss.  The stage's inputs are fresh leaf tensors, so each stage's graph
     ends at its inputs and their .grad is the gradient to send back.
  B  backpropagates the output gradients (or the loss / M) through the stage,
     accumulating parameter gradients and sending the input gradients.
  I  computes only the input gradients, keeping what W needs of the graph;
     its W later accumulates the parameter gradients from the gradients I
     captured where the weight branches leave the input path, and frees it
     (splitbackward.py).
  R  replays a recomputed forward (activation checkpointing).  The F of a
     micro-batch that an R replays runs with autograd, sends its outputs as
     fresh leaves and drops its graph right away, keeping only the stage's
     inputs and the RNG state; the R runs the forward again from them under
     that RNG state and keeps the graph for the backward, so the gradients
     are those of a plain F (bit for bit on CPU).
  Offload / Reload move the tensors autograd saved for a (chunk, micro-batch)
     in its forward to host memory and back (activations.py holds them per
     key): on CUDA into pinned buffers with non_blocking copies on a copy
     stream that first waits for the compute stream, the device tensor kept
     for that stream until its copy ends, and the backward or W of a reloaded
     micro-batch waits for its copy; on CPU into separate buffers (clones).
     The values come back exactly, so the gradients are the same bit for bit.
  Evict / Hold / Return / Load (BPipe) move the same saved tensors to a partner
     rank and back: the owner's Evict takes them out of their holders and sends
     them (an evicted message, saved_wire.py) to the partner, whose Hold receives
     and keeps them; the partner's Return sends them back (a returned message)
     and the owner's Load puts them into the holders before the backward. The
     messages are posted with the F/B messages' machinery (transport.py), in the
     send and receive orders the compiler proved deadlock-free. On CUDA they are
     posted from the copy stream, which first waits for the compute stream, and a
     backward after a Load waits for the Load's event, as for Reload (written
     like Offload's path, not run on a GPU yet).
Activations are freed exactly where the compiler's memory check frees them,
and measured (activations.py) after every op.

With per-micro-batch sizes (``sizes`` in the schedule) micro-batch i's loss
is weighted by size_i / sum(sizes) instead of 1 / M, so the gradient is that
of the mean over samples of the whole batch.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from .activations import ActivationTracker, LoadMismatch
from .errors import PipelineError, PipelineTimeout
from .overlap import run_pair
from .program import TRANSFER_KINDS, Op, Program, RankProgram
from .splitbackward import input_half, weight_half
from .transport import Transport
from .wire import as_tensors, describe, metas_of


def _no_transfers() -> Dict[str, int]:
    """A step's Evict counts before any ran (stats["evicted"])."""
    return {"evicted": 0, "tensors": 0, "empty": 0, "bytes": 0}


@dataclass
class Record:
    """What a forward keeps for its backward."""
    inputs: List[torch.Tensor]           # the stage's tensor inputs (leaves)
    outputs: List[torch.Tensor] = field(default_factory=list)  # those carrying a gradient
    loss: Optional[torch.Tensor] = None  # last stage: loss / M
    split: object = None  # what I leaves for W (splitbackward.SplitState)
    args: Optional[List] = None      # recomputed: the forward's positional inputs
    kwargs: Optional[Dict] = None    # recomputed: its keyword inputs
    rng: Optional[Tuple] = None      # recomputed: RNG states before the forward


@dataclass
class StepData:
    """One step's micro-batches, as the ranks that need them see them."""
    args: List[Tuple]        # per micro-batch positional inputs of stage 0
    kwargs: List[Dict]       # per micro-batch keyword inputs of stage 0
    targets: List[Any]       # per micro-batch targets (loss ranks)


class Executor:
    def __init__(self, program: Program, rank: int, modules: Dict[int, torch.nn.Module],
                 loss_fn: Callable, transport: Transport, tracker: ActivationTracker,
                 overlap_fn: Optional[Callable], device: torch.device):
        self.program = program
        self.rank = rank
        self.me: RankProgram = program.ranks[rank]
        self.modules = modules  # chunk -> module
        self.loss_fn = loss_fn
        self.transport = transport
        self.tracker = tracker
        self.overlap_fn = overlap_fn
        self.device = device
        self.last_stage = program.num_stages - 1
        M = program.num_microbatches
        if program.microbatch_sizes:  # the mean over the samples of the whole batch
            total = sum(program.microbatch_sizes)
            self.scales = [s / total for s in program.microbatch_sizes]
            self.loss_weights = [s * M / total for s in program.microbatch_sizes]
        else:
            self.scales = [1.0 / M] * M
            self.loss_weights = None
        self.replays: Dict[Tuple[int, int], Record] = {}  # recomputed forwards awaiting R
        self._side_stream = None
        self._copy_stream = None  # CUDA: Offload and Reload's stream
        self._reloads: Dict[Tuple[int, int], Any] = {}  # CUDA: event after a Reload's copies
        self.transferred = _no_transfers()  # this step's Evicts
        self._holds: Dict[Tuple[int, int, int], Op] = {}  # Holds whose tensors are arriving
        self._loads: Dict[Tuple[int, int], Op] = {}       # Loads whose tensors are arriving

    # --- helpers ------------------------------------------------------------------
    def _local(self, stage: int, mb: int) -> bool:
        return 0 <= stage < self.program.num_stages and self.program.holder(stage, mb)[0] == self.rank

    def _where(self, op: Op) -> str:
        return f"rank {self.rank}, stage {op.stage}, {op.kind} of micro-batch {op.mb} (op {op.index})"

    # --- a step -------------------------------------------------------------------
    def run(self, data: StepData) -> List[torch.Tensor]:
        """Runs the rank's program; returns the losses of its micro-batches (unscaled)."""
        self.transport.reset()
        self.tracker.reset()
        self.losses: List[torch.Tensor] = []
        self.mailbox: Dict[Tuple[str, int, int], Tuple[List[torch.Tensor], list]] = {}
        self.replays.clear()
        self._reloads.clear()
        self.transferred = _no_transfers()
        self._loads.clear()
        self._holds.clear()
        self.data = data
        for step in self.me.steps:
            received = {}
            self._poll_arrivals(step[0])
            for op in step:
                if op.kind in ("Hold", "Load"):  # posted by the op, taken when needed
                    continue
                for mid in op.needs:
                    received[mid] = self.transport.take(mid, self._where(op))
            outgoing: List[Tuple[int, List[torch.Tensor], Op]] = []
            if len(step) == 2 and step[0].pair == "first":
                self._run_pair(step[0], step[1], received, outgoing)
            else:
                for op in step:
                    self._run_op(op, received, outgoing)
                    self.tracker.sample()
            self._poll_arrivals(step[0])
            for mid, tensors, op in sorted(outgoing, key=lambda item: item[0]):
                if op.kind in TRANSFER_KINDS:  # an Evict's or a Return's saved tensors
                    ident, saved = tensors
                    with self._stream_of(op):
                        self.transport.send_saved(mid, saved, ident, self._where(op))
                else:
                    self.transport.send(mid, tensors, self._where(op))
        self.transport.finish()
        if self.tracker.records:
            raise PipelineError(f"rank {self.rank}: end of step: activations of "
                                f"{sorted(self.tracker.records)} were never freed")
        if self.tracker.evicted or self.tracker.held or self._loads or self._holds:
            raise PipelineError(f"rank {self.rank}: end of step: evicted {sorted(self.tracker.evicted)} "
                                f"and held {sorted(self.tracker.held)} were never loaded or returned")
        return self.losses

    def _run_op(self, op: Op, received, outgoing) -> None:
        try:
            if op.kind == "F":
                self._forward(op, received, outgoing)
            elif op.kind == "B":
                self._backward(op, received, outgoing, split=False)
            elif op.kind == "I":
                self._backward(op, received, outgoing, split=True)
            elif op.kind == "R":
                self._replay(op)
            elif op.kind == "Offload":
                self._offload(op)
            elif op.kind == "Reload":
                self._reload(op)
            elif op.kind == "Evict":
                self._evict(op, outgoing)
            elif op.kind == "Hold":
                self._hold(op)
            elif op.kind == "Return":
                self._return(op, outgoing)
            elif op.kind == "Load":
                self._load(op)
            else:
                self._weight(op)
        except (PipelineError, PipelineTimeout):
            raise
        except Exception as error:
            raise PipelineError(f"{self._where(op)}: {type(error).__name__}: {error}") from error

    # --- F ------------------------------------------------------------------------
    def _stage_inputs(self, op: Op, received) -> Tuple[List, Dict, List[torch.Tensor], str]:
        """Positional and keyword inputs of F, its tensor inputs, and where they came from."""
        if op.stage == 0:
            return list(self.data.args[op.mb]), dict(self.data.kwargs[op.mb]), [], "the batch"
        if op.needs:
            (mid,) = op.needs
            tensors, metas = received[mid]
            source = f"rank {self.program.messages[mid].src}"
        else:
            tensors, metas = self.mailbox.pop(("act", op.stage, op.mb))
            source = f"this rank"
        inputs = []
        for t, meta in zip(tensors, metas):
            t = t.detach()
            if meta.grad:
                t.requires_grad_(True)
            inputs.append(t)
        return inputs, {}, inputs, f"stage {op.stage - 1} on {source}, {describe(metas)}"

    def _forward(self, op: Op, received, outgoing, module_call: Optional[Callable] = None) -> None:
        args, kwargs, leaves, source = self._stage_inputs(op, received)
        module = self.modules[op.chunk]
        key = (op.chunk, op.mb)
        record = Record(leaves)
        self.tracker.records[key] = record
        if op.recomputed:
            record.args, record.kwargs, record.rng = args, kwargs, self._rng_state()
        with self.tracker.saving(key):
            try:
                out = module(*args, **kwargs)
            except Exception as error:
                raise PipelineError(f"{self._where(op)}: the stage's forward failed on its inputs "
                                    f"from {source}: {type(error).__name__}: {error}") from error
            if op.stage == self.last_stage:
                loss = self.loss_fn(out, self.data.targets[op.mb])
                if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                    raise PipelineError(f"{self._where(op)}: loss_fn returned "
                                        f"{type(loss).__name__}, not a scalar tensor")
                self.losses.append(self._weighted(loss.detach().reshape(()), op.mb))
                record.loss = loss.reshape(()) * self.scales[op.mb]
                if op.recomputed:
                    self._drop(op, key, record)
                return
        outs = as_tensors(out, f"stage {op.stage}")
        metas = metas_of(outs)
        if op.recomputed:  # fresh leaves go on; the graph goes with `out`
            self._drop(op, key, record)
            outs = [o.detach().requires_grad_(m.grad) for o, m in zip(outs, metas)]
        else:
            record.outputs = [o for o, m in zip(outs, metas) if m.grad]
        self._deliver_forward(op, outs, metas, outgoing)

    def _weighted(self, loss: torch.Tensor, mb: int) -> torch.Tensor:
        """The loss as the step reports it: the mean over M of these is the mean over
        samples (micro-batch mb's loss weighted by size_mb * M / sum(sizes))."""
        return loss if self.loss_weights is None else loss * self.loss_weights[mb]

    # --- recomputation (R) ----------------------------------------------------------
    def _rng_state(self) -> Tuple:
        cuda = torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None
        return torch.get_rng_state(), cuda

    def _drop(self, op: Op, key, record: Record) -> None:
        """A recomputed forward: counted while its graph is alive, then only its inputs stay."""
        self.tracker.touch()
        record.loss = None
        del self.tracker.records[key]
        self.replays[key] = record

    def _replay(self, op: Op) -> None:
        key = (op.chunk, op.mb)
        record = self.replays.pop(key, None)
        if record is None:
            raise PipelineError(f"{self._where(op)}: replays a forward that did not run here")
        self.tracker.records[key] = record
        cpu, cuda = record.rng
        devices = [self.device] if cuda is not None else []
        with torch.random.fork_rng(devices=devices), self.tracker.saving(key):
            torch.set_rng_state(cpu)
            if cuda is not None:
                torch.cuda.set_rng_state(cuda, self.device)
            out = self.modules[op.chunk](*record.args, **record.kwargs)
            if op.stage == self.last_stage:
                loss = self.loss_fn(out, self.data.targets[op.mb])
                record.loss = loss.reshape(()) * self.scales[op.mb]
                return
        outs = as_tensors(out, f"stage {op.stage}")
        record.outputs = [o for o, m in zip(outs, metas_of(outs)) if m.grad]
        record.args = record.kwargs = record.rng = None

    # --- Offload and Reload --------------------------------------------------------
    def _copies(self):
        """The CUDA stream the copies run on, after the compute stream's work so far."""
        if self._copy_stream is None:
            self._copy_stream = torch.cuda.Stream(self.device)
        self._copy_stream.wait_stream(torch.cuda.current_stream(self.device))
        return self._copy_stream

    def _to_host(self, tensor: torch.Tensor) -> torch.Tensor:
        if tensor.device.type != "cuda":
            return tensor.clone()  # a buffer of its own; the original goes with its last reference
        stream = self._copies()
        host = torch.empty_like(tensor, device="cpu", pin_memory=True)
        with torch.cuda.stream(stream):
            host.copy_(tensor, non_blocking=True)
        tensor.record_stream(stream)  # not reused before the copy has read it
        return host

    def _to_device(self, tensor: torch.Tensor) -> torch.Tensor:
        if self.device.type != "cuda":
            return tensor.clone()
        stream = self._copies()
        with torch.cuda.stream(stream):
            device = torch.empty_like(tensor, device=self.device)
            device.copy_(tensor, non_blocking=True)
        return device

    def _offload(self, op: Op) -> None:
        key = (op.chunk, op.mb)
        if key not in self.tracker.records or key in self.tracker.offloaded:
            raise PipelineError(f"{self._where(op)}: offloads an activation that is not stored "
                                "here (its forward did not run, or it is offloaded already)")
        self.tracker.offload(key, self._to_host)

    def _reload(self, op: Op) -> None:
        key = (op.chunk, op.mb)
        if key not in self.tracker.offloaded:
            raise PipelineError(f"{self._where(op)}: reloads an activation that is not offloaded")
        self.tracker.reload(key, self._to_device)
        if self._copy_stream is not None and self.device.type == "cuda":
            self._reloads[key] = self._copy_stream.record_event()

    # --- Evict, Hold, Return and Load (BPipe) ----------------------------------------
    def _poll_arrivals(self, op: Op) -> None:
        """Posts the next receives of saved tensors on their way here, if any
        (between steps: before and after each)."""
        if self.transport.unfinished:
            with self._stream_of(op, always=True):
                self.transport.poll()

    def _stream_of(self, op: Op, always: bool = False):
        """Where a transfer's messages are posted: on CUDA the copy stream (after the
        compute stream's work so far), as Offload's copies; elsewhere as they come."""
        if (always or op.kind in TRANSFER_KINDS) and self.device.type == "cuda":
            return torch.cuda.stream(self._copies())
        return nullcontext()

    def _identity(self, op: Op) -> Tuple[int, int, int]:
        """The activation a transfer moves: (owner rank, stage, micro-batch)."""
        owner = self.rank if op.kind in ("Evict", "Load") else op.peer
        return owner, op.stage, op.mb

    def _evict(self, op: Op, outgoing) -> None:
        key = (op.chunk, op.mb)
        if key not in self.tracker.records or key in self.tracker.offloaded \
                or key in self.tracker.evicted:
            raise PipelineError(f"{self._where(op)}: evicts an activation that is not stored "
                                "here (its forward did not run, or it was moved already)")
        tensors = self.tracker.evict(key)
        self.transferred["evicted"] += 1
        self.transferred["tensors"] += len(tensors)
        self.transferred["empty"] += sum(1 for t in tensors if t.numel() == 0)
        self.transferred["bytes"] += sum(t.numel() * t.element_size() for t in tensors)
        (mid,) = op.sends
        outgoing.append((mid, (self._identity(op), tensors), op))

    def _hold(self, op: Op) -> None:
        """Posts the receive (its header now, the rest as it arrives); the tensors
        count here from now on and are taken by the Return."""
        (mid,) = op.needs
        ident = self._identity(op)
        with self._stream_of(op):
            self.transport.post_until(mid, self._where(op))
        try:
            self.tracker.hold(ident)
        except ValueError as error:
            raise PipelineError(f"{self._where(op)}: holds rank {op.peer}'s activation: "
                                f"{error}") from None
        self._holds[ident] = op

    def _return(self, op: Op, outgoing) -> None:
        ident = self._identity(op)
        hold = self._holds.pop(ident, None)
        if hold is not None:  # its tensors, received (the transport checked sent_as)
            with self._stream_of(op):
                tensors, (sent_as, _) = self.transport.take(hold.needs[0], self._where(hold))
            self.tracker.hold(ident, tensors, sent_as)
        try:  # sent back under the identity it came with: the owner's Load checks it
            sent_as, tensors = self.tracker.give_back(ident)
        except ValueError as error:
            raise PipelineError(f"{self._where(op)}: returns rank {op.peer}'s activation: "
                                f"{error}") from None
        (mid,) = op.sends
        outgoing.append((mid, (sent_as, tensors), op))

    def _load(self, op: Op) -> None:
        """Posts the receive; the tensors go into the holders before the backward."""
        key = (op.chunk, op.mb)
        if key not in self.tracker.evicted or key in self._loads:
            raise PipelineError(f"{self._where(op)}: loads an activation that is not evicted")
        (mid,) = op.needs
        with self._stream_of(op):
            self.transport.post_until(mid, self._where(op))
        self.tracker.loading.add(key)  # counted from the Load on, as the compiler counts
        self._loads[key] = op

    def _finish_load(self, key) -> None:
        op = self._loads.pop(key)
        with self._stream_of(op):
            tensors, _ = self.transport.take(op.needs[0], self._where(op))
            try:  # CUDA: strided copies after the receive the copy stream waited for
                self.tracker.load(key, tensors)
            except LoadMismatch as error:
                raise PipelineError(f"{self._where(op)}: rank {op.peer} returned tensors that "
                                    f"are not the ones evicted: {error}") from None
        self.tracker.loading.discard(key)
        if self._copy_stream is not None and self.device.type == "cuda":
            self._reloads[key] = self._copy_stream.record_event()

    def _reloaded(self, op: Op) -> None:
        """Before a backward or W: its activation is back (CUDA: its copies have ended)."""
        key = (op.chunk, op.mb)
        if key in self._loads:
            self._finish_load(key)
        if key in self.tracker.offloaded:
            raise PipelineError(f"{self._where(op)}: runs while its activation is offloaded "
                                "(no Reload before it)")
        if key in self.tracker.evicted:
            raise PipelineError(f"{self._where(op)}: runs while its activation is evicted "
                                f"to another rank (no Load before it)")
        event = self._reloads.pop(key, None)
        if event is not None:
            torch.cuda.current_stream(self.device).wait_event(event)

    def _deliver_forward(self, op: Op, outs, metas, outgoing) -> None:
        if self._local(op.stage + 1, op.mb):
            self.mailbox[("act", op.stage + 1, op.mb)] = ([o.detach() for o in outs], metas)
        else:
            (mid,) = op.sends
            outgoing.append((mid, list(outs), op))

    # --- B and I ------------------------------------------------------------------
    def _output_grads(self, op: Op, received, record: Record) -> Optional[List[torch.Tensor]]:
        if op.stage == self.last_stage:
            return None
        if op.needs:
            (mid,) = op.needs
            grads, _ = received[mid]
        else:
            grads, _ = self.mailbox.pop(("grad", op.stage, op.mb))
        if len(grads) != len(record.outputs):
            raise PipelineError(f"{self._where(op)}: received {len(grads)} gradients for "
                                f"{len(record.outputs)} outputs that carry one")
        return grads

    def _roots(self, record: Record, grads):
        if record.loss is not None:
            return [record.loss], None
        return record.outputs, grads

    def _backward(self, op: Op, received, outgoing, split: bool) -> None:
        self._reloaded(op)
        key = (op.chunk, op.mb)
        record: Record = self.tracker.records[key]
        grads = self._output_grads(op, received, record)
        roots, root_grads = self._roots(record, grads)
        wanted = [t for t in record.inputs if t.requires_grad]
        if split:
            params = [p for p in self.modules[op.chunk].parameters() if p.requires_grad]
            input_grads, record.split = input_half(roots, root_grads, wanted, params)
        else:
            if roots and any(r.requires_grad for r in roots):
                torch.autograd.backward(roots, root_grads)
            input_grads = [t.grad for t in wanted]
            del self.tracker.records[key]
        self._deliver_backward(op, record, wanted, input_grads, outgoing)

    def _deliver_backward(self, op: Op, record, wanted, input_grads, outgoing) -> None:
        if op.stage == 0:
            return
        grads = [g if g is not None else torch.zeros_like(t) for t, g in zip(wanted, input_grads)]
        if self._local(op.stage - 1, op.mb):
            self.mailbox[("grad", op.stage - 1, op.mb)] = (grads, [])
        else:
            (mid,) = op.sends
            outgoing.append((mid, grads, op))

    # --- W ------------------------------------------------------------------------
    def _weight(self, op: Op) -> None:
        self._reloaded(op)
        key = (op.chunk, op.mb)
        record: Record = self.tracker.records.pop(key)
        params = [p for p in self.modules[op.chunk].parameters() if p.requires_grad]
        weight_half(record.split, params)

    # --- overlap pairs ------------------------------------------------------------
    def _run_pair(self, forward: Op, backward: Op, received, outgoing) -> None:
        # F & I, F & W, and a recomputed F: the halves run one after the other
        if backward.kind != "B" or forward.recomputed:
            for op in (forward, backward):
                self._run_op(op, received, outgoing)
                self.tracker.sample()
            return
        try:
            run_pair(self, forward, backward, received, outgoing)
        except (PipelineError, PipelineTimeout):
            raise
        except Exception as error:
            raise PipelineError(f"rank {self.rank}, overlap pair {forward.kind}(stage "
                                f"{forward.stage}, micro-batch {forward.mb}) & {backward.kind}"
                                f"(stage {backward.stage}, micro-batch {backward.mb}) (ops "
                                f"{forward.index}-{backward.index}): {type(error).__name__}: "
                                f"{error}") from error
