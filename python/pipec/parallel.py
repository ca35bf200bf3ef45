"""Pipeline x data parallel: pipelines of P ranks, D replicas of each, one job.

    # torchrun --nproc-per-node 4 train.py     (P = 2 pipeline ranks x D = 2 replicas)
    mesh = pipec.parallel.init_mesh(pp=2, dp=2)
    pipe = pipec.parallel.DataParallelPipeline("1f1b", {"P": 2, "M": 4}, stage_fn, loss_fn, mesh)
    opt = torch.optim.AdamW([p for _, m in pipe.modules() for p in m.parameters()])
    loss = pipe.step(my_replicas_batch, target=my_replicas_target)
    opt.step(); opt.zero_grad()

The mesh. A 2-D DeviceMesh ("dp", "pp") over the job: global rank
d * P + p is pipeline rank p of replica d, so a pipeline is P consecutive
ranks (one node's GPUs, where NVLink carries the pipeline's messages) and a
stage's D replicas are P apart. Each pipeline runs pipec.torch.Pipeline on its
"pp" group; each replica feeds its own batch.

The reduction: FSDP2. Every stage module is wrapped with PyTorch's
`fully_shard` over the "dp" sub-mesh, its parameters sharded D ways and
all-gathered before a forward (kept unsharded until the step ends:
reshard_after_forward=False, as a pipeline runs several forwards before their
backwards). During the step gradient synchronisation is off, so FSDP2
accumulates each micro-batch's gradient locally; after the step,
`finalize_backward()` (FSDP2's manual finalization, the public API torch 2.15
gives schedules that reduce gradients as a separate action) reduce-scatters
them once, averaged over the replicas. The gradient left in each parameter
(a DTensor shard) is then that of the mean micro-batch loss over all D * M
micro-batches of the step, and any torch.optim optimizer steps the shards.
DDP was not chosen: its reducer fires in every backward and needs the last
micro-batch's backward to run outside no_sync(), which a schedule's split
backward (I, then W later) and its interleaved order do not give.

Split backwards (I, then W later): resharding after backward is off during
the step too (as PyTorch's own pipelining sets it), so the W after its I still
finds the unsharded parameters the graph used, and its gradients are reduced
with the rest at finalization.

Limits (checked, with a clear error): schedules whose stages have two copies
(DualPipe, Chimera) are refused here, because the copies' gradient all-reduce
in pipec.torch.Pipeline reads `.grad` during the step, before FSDP2 has
reduced it, and the copies' initial broadcast flattens parameters that are
DTensor shards; and the whole job's size must be P * D. Every single-copy
schedule runs (gpipe, 1f1b, interleaved, zb_h1, zb_h2, zbv, dualpipev).
"""
from __future__ import annotations

from typing import Callable, Mapping

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import fully_shard

from .compiler import compile_schedule
from .errors import PipelineError
from .pipeline import Pipeline


def init_mesh(pp: int, dp: int, device_type: str | None = None) -> DeviceMesh:
    """The ("dp", "pp") mesh over the whole job (every rank calls it)."""
    if not dist.is_initialized():
        raise PipelineError("torch.distributed is not initialized: call "
                            "torch.distributed.init_process_group first (torchrun sets its environment)")
    world = dist.get_world_size()
    if pp * dp != world:
        raise PipelineError(f"rank {dist.get_rank()}: a mesh of pp = {pp} x dp = {dp} needs "
                            f"{pp * dp} ranks, the job has {world}")
    if device_type is None:
        device_type = "cuda" if dist.get_backend() == "nccl" else "cpu"
    return init_device_mesh(device_type, (dp, pp), mesh_dim_names=("dp", "pp"))


class DataParallelPipeline:
    """pipec.torch.Pipeline on the mesh's "pp" group, its stages sharded over "dp"."""

    def __init__(self, schedule: str, sizes: Mapping[str, int],
                 stage_fn: Callable[[int], torch.nn.Module], loss_fn: Callable,
                 mesh: DeviceMesh, **options):
        if mesh.mesh_dim_names != ("dp", "pp"):
            raise PipelineError("the mesh must have dimensions ('dp', 'pp'): use pipec.parallel.init_mesh")
        self.mesh = mesh
        self.dp_group = mesh.get_group("dp")
        self.dp = dist.get_world_size(self.dp_group)
        dp_mesh = mesh["dp"]

        def sharded_stage(s: int) -> torch.nn.Module:
            module = stage_fn(s)
            fully_shard(module, mesh=dp_mesh, reshard_after_forward=False)
            module.set_manual_backward_finalization(True)
            module.set_requires_gradient_sync(False)  # accumulate; reduce once per step
            module.set_reshard_after_backward(False)  # a W after its I needs the unsharded params
            return module

        # Checked before any module is built or sharded (compiled once, cached).
        program, _ = compile_schedule(schedule, sizes, options.get("compiler"))
        if any(len(copies) > 1 for copies in program.stage_copies):
            raise PipelineError(
                f"rank {dist.get_rank()}: {program.schedule} holds stages twice; "
                "pipeline x data parallel runs single-copy schedules (see pipec.parallel)")
        # Initial weights are sharded from each rank's full copy, so stage_fn
        # must be deterministic.
        self.pipe = Pipeline(schedule, sizes, sharded_stage, loss_fn,
                             group=mesh.get_group("pp"), **options)
        self.num_stages = self.pipe.num_stages

    def modules(self):
        """(stage, module) for every stage this rank holds; parameters are DTensor shards."""
        return self.pipe.modules()

    def step(self, *inputs, target=None, **kwargs):
        """One step on this replica's batch (arguments as Pipeline.step takes them);
        gradients reduced over the replicas.

        Returns the mean loss over every replica's micro-batches on the ranks
        that compute losses (the same ranks in every replica), None elsewhere.
        """
        loss = self.pipe.step(*inputs, target=target, **kwargs)
        for _, module in self.pipe.modules():
            module.set_requires_gradient_sync(True)
            module.set_reshard_after_backward(True)
            module.finalize_backward()  # reduce-scatter, averaged over "dp"
            module.set_requires_gradient_sync(False)
            module.set_reshard_after_backward(False)
        if loss is None:
            return None
        total = torch.as_tensor(loss, dtype=torch.float64).detach().clone()
        dist.all_reduce(total, group=self.dp_group)  # gloo has no AVG: sum, then divide
        return total / self.dp
