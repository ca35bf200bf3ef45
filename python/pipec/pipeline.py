"""``pipec.torch.Pipeline``: train ordinary PyTorch modules with any schedule
pipec proves, over torch.distributed.

Example (one process per pipeline rank, e.g. ``torchrun --nproc-per-node 4``)::

    import torch, torch.distributed as dist, pipec.torch

    dist.init_process_group("gloo")
    def stage_fn(s):                       # a fresh module for stage s
        torch.manual_seed(s)               # deterministic: copies start identical
        return torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh())
    pipe = pipec.torch.Pipeline("dualpipe", {"P": 4, "M": 8}, stage_fn,
                                torch.nn.functional.mse_loss)
    opt = torch.optim.SGD([p for _, m in pipe.modules() for p in m.parameters()], lr=0.1)
    for x, y in batches:                   # the whole step's batch on every rank
        opt.zero_grad()
        loss = pipe.step(x, target=y)      # mean loss on loss ranks, None elsewhere
        opt.step()
"""

from __future__ import annotations

import atexit
import gc
import os
import weakref
from datetime import timedelta
from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Tuple

import torch
import torch.distributed as dist

from .activations import ActivationTracker
from .compiler import compile_schedule
from .copies import CopySync, _wait, pipelines_of_job
from .errors import PipelineError
from .executor import Executor, StepData
from .microbatch import split
from .program import Program
from .transport import Transport
from .transport import channel_groups as make_channel_groups

DEFAULT_TIMEOUT_S = float(os.environ.get("PIPEC_TIMEOUT", "300"))

# Pipelines not yet closed; at interpreter exit they drop their process groups.
_open_pipelines: "weakref.WeakSet[Pipeline]" = weakref.WeakSet()


@atexit.register
def _close_open_pipelines() -> None:
    """A process group that outlives torch.distributed.destroy_process_group() is
    destroyed with the interpreter (a module global such as the README's `pipe`),
    and on gloo that aborts the process now and then ("terminate called without an
    active exception", about one run in three of a 2-rank job here). At exit, while
    the interpreter is still whole, every open pipeline drops its groups first; a
    group the job has not destroyed stays in torch's registry and is unaffected."""
    for pipe in list(_open_pipelines):
        pipe.close()
    gc.collect()


class Pipeline:
    """Runs schedule `schedule` at `sizes` on the ranks of `group`.

    Args:
        schedule: a library name ("1f1b", "dualpipe", ...) or a path to a .pipe file.
        sizes: the schedule's parameters, e.g. {"P": 4, "M": 8} (plus "v" where it has
            one); P must equal the group's size.
        stage_fn: stage_fn(s) returns a fresh nn.Module for stage s, on this rank's
            device; called for every stage copy this rank holds.
        loss_fn: loss_fn(output, target) -> scalar tensor, per micro-batch.
        group: the pipeline's process group (default: the whole job).
    Options:
        timeout (seconds, default $PIPEC_TIMEOUT or 300): the longest any receive,
            send or collective may wait before the step fails naming it.
        static_shapes (default True): stage outputs keep their shapes from step to step
            (a header describing them travels on the first step only).
        overlap_fn: runs overlap pairs (see pipec/overlap.py), DeepSeek's signature.
        track_activations (default True): measure live activations (see stats).
        broadcast_copies (default True): start every copy of a replicated stage from
            copy 0's parameters.
        device: where stages run (default: cuda:current on NCCL, else cpu).
        channel_groups: one two-rank process group per channel (default: on NCCL only;
            on gloo, tags keep the channels apart).
        compiler: path to pipec (default $PIPEC, else pipec on PATH).
    """

    def __init__(self, schedule: str, sizes: Mapping[str, int], stage_fn: Callable[[int], torch.nn.Module],
                 loss_fn: Callable, group=None, *, timeout: float = DEFAULT_TIMEOUT_S,
                 static_shapes: bool = True, overlap_fn: Optional[Callable] = None,
                 track_activations: bool = True, broadcast_copies: bool = True,
                 device: Optional[torch.device] = None, compiler: Optional[str] = None,
                 channel_groups: Optional[bool] = None):
        channel_groups_option = channel_groups
        if not dist.is_initialized():
            raise PipelineError("torch.distributed is not initialized: call "
                                "torch.distributed.init_process_group first (torchrun sets "
                                "the environment it reads)")
        self.group = group if group is not None else dist.group.WORLD
        self.rank = dist.get_rank(self.group)
        world = dist.get_world_size(self.group)
        if "P" in sizes and sizes["P"] != world:
            raise PipelineError(f"rank {self.rank}: sizes give P = {sizes['P']}, but the pipeline "
                                f"group has {world} ranks; P must equal the group's size")
        self.program: Program
        self.program, self.schedule_path = compile_schedule(schedule, sizes, compiler)
        if self.program.num_ranks != world:
            raise PipelineError(f"rank {self.rank}: schedule {self.program.schedule} at these sizes "
                                f"runs on {self.program.num_ranks} ranks, but the pipeline group "
                                f"has {world}")
        self.backend = dist.get_backend(self.group)
        if device is None:
            device = torch.device("cuda", torch.cuda.current_device()) \
                if self.backend == "nccl" else torch.device("cpu")
        self.device = torch.device(device)
        self.timeout = float(timeout)
        self.loss_fn = loss_fn
        me = self.program.ranks[self.rank]
        self._slots = {slot.chunk: slot for slot in me.slots}
        self._modules: Dict[int, torch.nn.Module] = {}
        for slot in me.slots:
            module = stage_fn(slot.stage)
            if not isinstance(module, torch.nn.Module):
                raise PipelineError(f"rank {self.rank}: stage_fn({slot.stage}) returned "
                                    f"{type(module).__name__}, not a torch.nn.Module")
            self._check_device(slot.stage, module)
            self._modules[slot.chunk] = module
        timeout_td = timedelta(seconds=self.timeout)
        if channel_groups_option is None:
            channel_groups_option = self.backend == "nccl"
        needs_pipelines = channel_groups_option or len(self.program.loss_ranks) > 1 or any(
            len({r for r, _ in c}) > 1 for c in self.program.stage_copies)
        pipelines = pipelines_of_job(self.group) if needs_pipelines else []
        groups = make_channel_groups(self.program, self.group, pipelines, timeout_td) \
            if channel_groups_option else None
        self._transport = Transport(self.program, self.rank, self.group, self.device,
                                    self.timeout, static_shapes, groups)
        self._copies = CopySync(self.program, self.rank, self._modules, self.group, pipelines,
                                self.timeout)
        if broadcast_copies:
            self._copies.broadcast_initial()
        self._loss_group = None
        loss_ranks = self.program.loss_ranks
        if len(loss_ranks) > 1:
            mine = dist.get_process_group_ranks(self.group)
            for pipeline in (pipelines or [tuple(mine)]):
                g = dist.new_group([pipeline[r] for r in loss_ranks], timeout=timeout_td)
                if tuple(pipeline) == tuple(mine):
                    self._loss_group = g
        moves = any(op.kind in ("Offload", "Evict") for r in self.program.ranks for op in r.ops)
        self._tracker = ActivationTracker(track_activations, self.program.size_of, moves=moves)
        self._executor = Executor(self.program, self.rank, self._modules, loss_fn,
                                  self._transport, self._tracker, overlap_fn, self.device)
        self.stats: Dict[str, Any] = {}
        _open_pipelines.add(self)

    def close(self) -> None:
        """Drops this pipeline's process groups and messaging state (the modules stay,
        see modules()); step() refuses afterwards. Called for every open pipeline at
        interpreter exit; call it yourself before destroy_process_group() to free the
        groups sooner."""
        self._transport = self._copies = self._executor = self._loss_group = None
        self.group = None
        _open_pipelines.discard(self)

    # --- what the user reads ------------------------------------------------------
    @property
    def num_stages(self) -> int:
        return self.program.num_stages

    @property
    def num_microbatches(self) -> int:
        return self.program.num_microbatches

    def modules(self) -> Iterator[Tuple[int, torch.nn.Module]]:
        """(stage, module) for every stage copy this rank holds, by chunk."""
        for chunk in sorted(self._modules):
            yield self._slots[chunk].stage, self._modules[chunk]

    def slots(self) -> Iterator[Tuple[int, int, torch.nn.Module]]:
        """(stage, copy, module) for every stage copy this rank holds."""
        for chunk in sorted(self._modules):
            slot = self._slots[chunk]
            yield slot.stage, slot.copy, self._modules[chunk]

    @property
    def computes_loss(self) -> bool:
        return self.rank in self.program.loss_ranks

    # --- checks -------------------------------------------------------------------
    def _check_device(self, stage: int, module: torch.nn.Module) -> None:
        for name, tensor in list(module.named_parameters()) + list(module.named_buffers()):
            if tensor.device != self.device:
                raise PipelineError(
                    f"rank {self.rank}, stage {stage}: parameter or buffer '{name}' is on "
                    f"{tensor.device}, but this pipeline runs on {self.device}; build the module "
                    f"on {self.device} in stage_fn (or pass device=...)")

    # --- a step -------------------------------------------------------------------
    def step(self, *args, target=None, **kwargs) -> Optional[torch.Tensor]:
        """Runs one training step over the whole batch (split into M micro-batches along
        dimension 0) and leaves the gradient of the mean micro-batch loss in every held
        module's .grad (accumulating onto what is there). Returns the mean loss (a 0-d
        tensor) on ranks that compute losses, None elsewhere. A schedule that declares
        micro-batch `sizes` splits the rows in those proportions and weights each
        micro-batch's loss by its share of the rows: with a loss_fn that means over its
        rows, the loss and gradients are those of the mean over the whole batch."""
        if self._executor is None:
            raise PipelineError(f"rank {self.rank}: this pipeline was closed (close())")
        M = self.program.num_microbatches
        me = self.program.ranks[self.rank]
        needs_input = any(op.stage == 0 and op.kind == "F" for op in me.ops)
        if needs_input and not args and not kwargs:
            raise PipelineError(f"rank {self.rank} holds stage 0 and needs the step's inputs")
        if self.computes_loss and target is None:
            raise PipelineError(f"rank {self.rank} computes losses and needs target=")
        sizes = self.program.microbatch_sizes or None
        try:
            data = StepData(
                args=split(tuple(args), M, self.device, "input", sizes) if needs_input else [()] * M,
                kwargs=split(dict(kwargs), M, self.device, "input", sizes) if needs_input else [{}] * M,
                targets=split(target, M, self.device, "target", sizes) if self.computes_loss else [None] * M)
        except ValueError as error:
            raise PipelineError(f"rank {self.rank}: {error}") from None
        self._copies.before_step()
        losses = self._executor.run(data)
        self._copies.after_step()
        predicted = [op.live for op in me.ops]
        self.stats = {
            "rank": self.rank,
            "measured_peak_activations": self._tracker.peak if self._tracker.enabled else None,
            "predicted_peak_activations": me.peak_activations,
            "measured_live": list(self._tracker.samples) if self._tracker.enabled else None,
            "predicted_live": predicted,
            "peak_held_messages": self._transport.held_peak,
            # BPipe: what this rank's Evicts sent to their partners this step
            "evicted": dict(self._executor.transferred),
        }
        if not self.computes_loss:
            return None
        total = torch.stack(losses).sum() / M if losses else torch.zeros((), device=self.device)
        if self._loss_group is not None:
            _wait(dist.all_reduce(total, group=self._loss_group, async_op=True), self.timeout,
                  f"rank {self.rank}: combining the losses of the loss ranks")
        return total
