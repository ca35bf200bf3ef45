"""One rank of a pipeline x data-parallel run (pipec.parallel): P pipeline
ranks x D replicas in one gloo job, as torchrun starts it. For each schedule,
trains the test stages (models.py) for a few AdamW steps, each replica on its
own rows of the step's global batch, and compares after every step with one
process training the same modules on the whole global batch (D * M
micro-batches, the mean of their losses): the loss on loss ranks, every
gradient (the FSDP2 shards gathered, DTensor.full_tensor()) and every
parameter after the optimizer. Also checks that a two-copy schedule is
refused (pipec.parallel's limit).

    launcher.py --nproc 4 --deadline 300 worker_parallel.py P D SCHEDULE[,SCHEDULE...]
"""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
from pipec.compiler import compile_schedule  # noqa: E402
from pipec.errors import PipelineError  # noqa: E402
from pipec.parallel import DataParallelPipeline, init_mesh  # noqa: E402

TOL = 1e-10
STEPS = 3


def fail(message):
    print(f"FAIL rank {dist.get_rank()}: {message}", flush=True)
    sys.exit(1)


def full(t):
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def run(mesh, P, D, schedule, M=4):
    sizes = {"P": P, "M": M}
    S = compile_schedule(schedule, sizes)[0].num_stages
    pipe = DataParallelPipeline(schedule, sizes, models.stage_fn_for(S), models.loss_fn, mesh,
                                timeout=60)
    replica = mesh.get_local_rank("dp")
    reference = [models.Stage(s, S) for s in range(S)]
    opt = torch.optim.AdamW([p for _, m in pipe.modules() for p in m.parameters()], lr=0.01)
    ref_opt = torch.optim.AdamW([p for m in reference for p in m.parameters()], lr=0.01)
    worst = 0.0
    rows = 2 * M  # per replica
    for step in range(STEPS):
        x, mask, target = models.batch(step, rows * D)
        mine = slice(replica * rows, (replica + 1) * rows)
        loss = pipe.step(x[mine], mask=mask[mine], scale=0.5, target=target[mine])
        ref_loss = models.reference_step(reference, x, mask, target, D * M, scale=0.5)
        if loss is not None:
            worst = max(worst, abs(loss.item() - ref_loss.item()))
        for stage, module in pipe.modules():
            for (name, p), q in zip(module.named_parameters(), reference[stage].parameters()):
                worst = max(worst, (full(p.grad) - q.grad).abs().max().item())
        opt.step()
        ref_opt.step()
        opt.zero_grad()
        ref_opt.zero_grad()
        for stage, module in pipe.modules():
            for p, q in zip(module.parameters(), reference[stage].parameters()):
                worst = max(worst, (full(p.detach()) - q.detach()).abs().max().item())
        if not worst <= TOL:
            fail(f"{schedule} P={P} x D={D}: step {step}: differs from single-process PyTorch "
                 f"by {worst:.3g} > {TOL:g}")
    print(f"PASS {schedule} P={P} x D={D} M={M} steps={STEPS} max difference {worst:.2e}",
          flush=True)


def main():
    P, D, schedules = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")
    dist.init_process_group("gloo")
    mesh = init_mesh(pp=P, dp=D)
    for schedule in schedules:
        run(mesh, P, D, schedule)
    try:  # two-copy schedules: refused with the reason
        DataParallelPipeline("dualpipe", {"P": P, "M": 2 * P}, models.stage_fn_for(P),
                             models.loss_fn, mesh, timeout=60)
        fail("dualpipe was accepted")
    except PipelineError as error:
        if "holds stages twice" not in str(error):
            fail(f"dualpipe refused for another reason: {error}")
    print("PASS dualpipe refused", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
