"""A pipec schedule run by PyTorch's own pipelining runtime (issue 22, item 6).

    sched, stages = pipec.torch_native.pytorch_schedule(
        "zbv", {"P": 2, "M": 4}, stage_fn, loss_fn, group=None)
    losses = []
    sched.step(x, target=y, losses=losses)   # on every rank, as PyTorch's schedules run

For single-copy schedules only (one rank per stage: gpipe, 1f1b, interleaved,
zb_h1, zb_h2, zbv, dualpipev, imported ones): PyTorch gives each stage one rank,
so DualPipe and Chimera, whose stages have two copies, run only in pipec's own
executor (pipec.torch.Pipeline). The order is compiled for the actual sizes by
`pipec check` (nothing unproved runs) and `pipec emit --target torch-csv`,
parsed in memory; no CSV file is written or loaded. The compiler and the
library are found as for pipec.torch.Pipeline (pipec.compiler: $PIPEC or PATH).

Which PyTorch API. torch 2.15's public schedule classes (ScheduleGPipe, ...,
ScheduleDualPipeV) each compute their own order; the only way to hand PyTorch
another order is the one those classes use themselves: subclass
`_PipelineScheduleRuntime`, fill `pipeline_order` with `_Action`s and call
`_prepare_schedule_with_comms` (`_load_csv` does the same from a file). All
three are private, so this module is pinned to the torch versions in
SUPPORTED_TORCH, refuses others with a message saying so, and
tests/python/test_torch_native.py checks the pin against the installed torch.

PyTorch's loss defect. PyTorch appends each loss to a list in the order the
last stage's forwards run and reads entry mb back for micro-batch mb's
backward, so a last stage that runs its forwards out of micro-batch order
stops with an error or trains with wrong gradients. The compiler warns
(TorchLossOrder) and so does this module: by default it raises
TorchLossOrderError; on_loss_order="warn" warns (TorchLossOrderWarning) and
builds the schedule anyway (to show the defect, as the tests do).
"""
from __future__ import annotations

import subprocess
import warnings
from typing import Callable, Mapping

import torch
import torch.distributed as dist

from pipec.compiler import find_compiler, resolve_schedule

# The private torch.distributed.pipelining API this module relies on was
# checked against these versions (major.minor).
SUPPORTED_TORCH = ("2.15",)


class TorchLossOrderError(ValueError):
    """The last stage runs its forwards out of micro-batch order (see module doc)."""


class TorchLossOrderWarning(UserWarning):
    """The same defect, when on_loss_order="warn"."""


def check_torch_version(version: str | None = None) -> None:
    """Raises RuntimeError unless torch's version is one this module was checked with."""
    version = version or torch.__version__
    if ".".join(version.split("+")[0].split(".")[:2]) not in SUPPORTED_TORCH:
        raise RuntimeError(
            f"pipec.torch_native uses torch.distributed.pipelining's private "
            f"_PipelineScheduleRuntime, _Action and _prepare_schedule_with_comms, checked "
            f"with torch {', '.join(SUPPORTED_TORCH)}; this is torch {version}. Use "
            f"pipec.torch.Pipeline (pipec's own executor), which needs no private API")


def _size_flags(sizes: Mapping[str, int]) -> list[str]:
    flags = []
    for name, value in sizes.items():
        flags += ["-D", f"{name}={int(value)}"]
    return flags


def _run(args: list[str]) -> str:
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise ValueError(f"pipec.torch_native: `{' '.join(args)}` failed (exit "
                         f"{done.returncode}):\n{done.stderr.strip()}")
    return done.stdout


def pipeline_order(schedule: str, sizes: Mapping[str, int], compiler: str | None = None):
    """Each rank's compute actions for these sizes, as PyTorch's `pipeline_order`.

    Returns {rank: [_Action, ...]}: the schedule is checked first (`pipec check`:
    the deadlock, dependency and coverage proofs), then written in PyTorch's
    compute-only notation (`pipec emit --target torch-csv`, golden-tested
    against PyTorch's own recorded orders) and parsed with PyTorch's parser.
    The compiler refuses a stage on two ranks (TorchCsvStageOnTwoRanks).
    """
    from torch.distributed.pipelining.schedules import _Action

    compiler = compiler or find_compiler()
    path = str(resolve_schedule(schedule))
    flags = _size_flags(sizes)
    # The loss-order warning is this module's to raise, as an exception.
    _run([compiler, "check", path, *flags, "-Wno-TorchLossOrder"])
    csv = _run([compiler, "emit", path, "--target", "torch-csv", *flags, "-Wno-TorchLossOrder"])
    order = {}
    for rank, line in enumerate(csv.splitlines()):
        cells = _split_cells(line)
        order[rank] = [a for a in (_Action.from_str(c) for c in cells) if a is not None]
    return order


def _split_cells(line: str) -> list[str]:
    # Commas separate cells; a pair "(0F1;1B0)OVERLAP_F_B" holds none.
    return [c for c in line.split(",") if c.strip()]


def _forwards(actions, stage: int):
    from torch.distributed.pipelining.schedules import FORWARD

    for action in actions:
        for a in action.sub_actions or (action,):
            if a.computation_type == FORWARD and a.stage_index == stage:
                yield a.microbatch_index


def loss_order_defect(order, num_stages: int) -> str | None:
    """Why PyTorch would pair the last stage's losses wrongly in `order`, or None."""
    last = num_stages - 1
    for rank, actions in order.items():
        for i, mb in enumerate(_forwards(actions, last)):
            if mb != i:
                return (
                    f"TorchLossOrder: the last stage (stage {last}, rank {rank}) runs the "
                    f"forward of micro-batch {mb} as its forward number {i}; PyTorch's "
                    f"pipelining runtime stores each loss in the order the forwards run and "
                    f"reads it back by micro-batch number, so the backward of micro-batch {i} "
                    f"would use micro-batch {mb}'s loss (or stop with 'Attempted to access "
                    f"loss'): wrong gradients. Run the last stage's forwards in micro-batch "
                    f"order, or use pipec.torch.Pipeline, which keys losses by micro-batch")
    return None


def schedule_class():
    """The PyTorch schedule class that runs a given order: a _PipelineScheduleRuntime."""
    check_torch_version()
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime

    class PipecSchedule(_PipelineScheduleRuntime):
        """A pipec-compiled order in PyTorch's runtime, built as PyTorch builds its own."""

        def __init__(self, stages, n_microbatches, order, **kwargs):
            super().__init__(stages, n_microbatches, **kwargs)
            self.pipeline_order = {rank: list(actions) for rank, actions in order.items()}
            # Validates the order, derives stage -> rank and adds the sends/receives.
            self._prepare_schedule_with_comms(self.pipeline_order)

    return PipecSchedule


def pytorch_schedule(schedule: str, sizes: Mapping[str, int],
                     stage_fn: Callable[[int], torch.nn.Module],
                     loss_fn: Callable, group=None, device=None, *,
                     on_loss_order: str = "raise", compiler: str | None = None,
                     **schedule_options):
    """PyTorch's schedule object for `schedule` at `sizes`, with this rank's stages.

    Returns (schedule_object, stages): call `schedule_object.step(inputs,
    target=..., losses=[...])` on every rank as with PyTorch's own schedules;
    `stages` are this rank's torch PipelineStage objects (`.submod` is the
    module stage_fn returned). Gradients are those of the mean micro-batch loss
    (PyTorch's scale_grads=True). `schedule_options` go to PyTorch's runtime.
    """
    from torch.distributed.pipelining import PipelineStage

    check_torch_version()
    if on_loss_order not in ("raise", "warn"):
        raise ValueError(f"on_loss_order must be 'raise' or 'warn', not {on_loss_order!r}")
    order = pipeline_order(schedule, sizes, compiler)
    num_stages = 1 + max(a.stage_index for actions in order.values() for action in actions
                         for a in (action.sub_actions or (action,)))
    defect = loss_order_defect(order, num_stages)
    if defect and on_loss_order == "raise":
        raise TorchLossOrderError(defect)
    if defect:
        warnings.warn(defect, TorchLossOrderWarning, stacklevel=2)
    world = dist.get_world_size(group)
    if len(order) != world:
        raise ValueError(f"pipec.torch_native: the schedule at {dict(sizes)} has {len(order)} "
                         f"ranks, the process group {world}")
    rank = dist.get_rank(group)
    device = device or torch.device("cpu")
    held = sorted({a.stage_index for action in order[rank]
                   for a in (action.sub_actions or (action,))})
    stages = [PipelineStage(stage_fn(s).to(device), s, num_stages, device, group=group)
              for s in held]
    n_microbatches = 1 + max(a.microbatch_index for actions in order.values()
                             for action in actions for a in (action.sub_actions or (action,)))
    obj = schedule_class()(stages, n_microbatches, order, loss_fn=loss_fn, **schedule_options)
    return obj, stages
