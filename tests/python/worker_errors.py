"""One rank of an error-case job: each case builds or steps a pipeline that
must fail, checks that the error is the documented one (its type and the
words that name rank, stage and op), and prints ``EXPECTED <message>``.

    worker_errors.py CASE

Cases:
  setup     (every rank) P different from the group's size; a library name and
            a file that do not exist; sizes outside the schedule's domain (the
            checker's own message); no compiler; a parameter on the wrong
            device; inputs that do not split into M micro-batches.
  mismatch  stage 0's output does not fit stage 1's input: rank 1 names its
            stage, op and the shapes it received; rank 0 fails too (its peer
            is gone) instead of waiting forever.
  dies      rank 1 exits in the middle of a step; rank 0 fails naming the op
            and the message it waited for.
  hangs     rank 1 sleeps in the middle of a step; rank 0 fails within the
            pipeline's timeout (3 s) naming the op; the launcher kills rank 1.
  reshape   with static_shapes=True the second step's batch is smaller: rank 0
            refuses to send stage 0's output of another shape, naming it and
            the option; rank 1 fails as its peer is gone.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
import pipec.torch  # noqa: E402
from pipec.torch import (CompilerNotFound, PipelineError, PipelineTimeout, ScheduleError,  # noqa: E402
                         ScheduleNotFound)


def expect(error_type, words, action) -> None:
    try:
        action()
    except error_type as error:
        text = str(error)
        missing = [w for w in words if w not in text]
        if missing:
            print(f"FAIL: {error_type.__name__} lacks {missing}: {text}", flush=True)
            sys.exit(1)
        print(f"EXPECTED {error_type.__name__}: {text.splitlines()[0]}", flush=True)
        return
    except Exception as error:  # the wrong error
        print(f"FAIL: expected {error_type.__name__} with {words}, got "
              f"{type(error).__name__}: {error}", flush=True)
        sys.exit(1)
    print(f"FAIL: expected {error_type.__name__} with {words}, nothing raised", flush=True)
    sys.exit(1)


def stage_fn(s):
    return models.Stage(s, 2)


def setup_cases(rank: int) -> None:
    P = dist.get_world_size()
    # The stages the equivalence tests train are ones TorchScript refuses.
    try:
        torch.jit.script(models.Stage(0, 2))
        print("FAIL: TorchScript accepted the test stage", flush=True)
        sys.exit(1)
    except Exception as error:
        print(f"EXPECTED TorchScript refuses the test stage: {str(error).strip().splitlines()[0]}",
              flush=True)
    pipe = lambda schedule, sizes, fn=stage_fn, **kw: pipec.torch.Pipeline(  # noqa: E731
        schedule, sizes, fn, models.loss_fn, timeout=10, **kw)
    expect(PipelineError, ["P = 3", f"{P} ranks", f"rank {rank}"],
           lambda: pipe("1f1b", {"P": 3, "M": 4}))
    expect(ScheduleNotFound, ["no library schedule named 'dualpipe_x'", "dualpipe,", "1f1b"],
           lambda: pipe("dualpipe_x", {"P": P, "M": 4}))
    expect(ScheduleNotFound, ["'missing/sched.pipe' does not exist"],
           lambda: pipe("missing/sched.pipe", {"P": P, "M": 4}))
    # The checker's own message for a size outside the domain.
    expect(ScheduleError, ["dualpipe.pipe", "M = 5",
                           "DualPipe needs an even number of micro-batches"],
           lambda: pipe("dualpipe", {"P": P, "M": 5}))
    saved = os.environ.get("PIPEC")
    os.environ["PIPEC"] = "/nonexistent/pipec"
    try:
        expect(CompilerNotFound, ["$PIPEC", "/nonexistent/pipec"],
               lambda: pipe("gpipe", {"P": P, "M": 2}))
    finally:
        os.environ["PIPEC"] = saved
    expect(PipelineError, [f"rank {rank}, stage", "'weight' is on meta", "runs on cpu"],
           lambda: pipe("gpipe", {"P": P, "M": 2},
                        lambda s: torch.nn.Linear(8, 8, device="meta")))
    good = pipe("1f1b", {"P": P, "M": 2})
    x, mask, target = models.batch(0, 3)
    expect(PipelineError, [f"rank {rank}", "3 rows", "2 equal micro-batches"],
           lambda: good.step(x, mask=mask, target=target))


class Narrow(torch.nn.Module):
    """Stage 0 of the mismatch case: outputs 5 features where stage 1 takes 8."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(models.HIDDEN, 5, dtype=torch.float64)

    def forward(self, x, mask=None, scale=1.0):
        return self.fc(x)


class Wide(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(models.HIDDEN, models.HIDDEN, dtype=torch.float64)

    def forward(self, y):
        return self.fc(y)


class Faulty(torch.nn.Module):
    """Stage 1 that, on the second step's micro-batch 1, dies or hangs."""

    def __init__(self, mode: str):
        super().__init__()
        self.inner = models.Stage(1, 2)
        self.mode = mode
        self.calls = 0

    def forward(self, *args):
        self.calls += 1
        if self.calls == 6:  # step 2 (M = 4 forwards per step), micro-batch 1
            if self.mode == "dies":
                os._exit(3)
            time.sleep(3600)
        return self.inner(*args)


def fault_case(rank: int, mode: str) -> None:
    pipe = pipec.torch.Pipeline("1f1b", {"P": 2, "M": 4}, lambda s: models.Stage(0, 2),
                                models.loss_fn, timeout=3)
    started = time.monotonic()

    def steps():
        for step in range(3):
            x, mask, target = models.batch(step, 8)
            pipe.step(x, mask=mask, target=target)

    error = PipelineTimeout if mode == "hangs" else PipelineError
    expect(error, ["rank 0, stage 0", "micro-batch", "rank 1 -> rank 0"], steps)
    took = time.monotonic() - started
    if took > 30:
        print(f"FAIL: the error came after {took:.1f} s", flush=True)
        sys.exit(1)


def mismatch_case(rank: int) -> None:
    stage = (lambda s: Narrow()) if rank == 0 else (lambda s: Wide())
    pipe = pipec.torch.Pipeline("gpipe", {"P": 2, "M": 2}, stage, models.loss_fn, timeout=5)
    x, mask, target = models.batch(0, 4)
    if rank == 1:
        expect(PipelineError, ["rank 1, stage 1, F of micro-batch 0",
                               "inputs from stage 0 on rank 0, ((2, 5) float64)",
                               "mat1 and mat2 shapes cannot be multiplied"],
               lambda: pipe.step(x, mask=mask, target=target))
        print("PASS mismatch", flush=True)
        os._exit(0)  # leave at once, as a failed rank does: rank 0 must notice
    expect(PipelineError, ["rank 0, stage 0, B of micro-batch 0"],
           lambda: pipe.step(x, mask=mask, target=target))


def reshape_case(rank: int) -> None:
    pipe = pipec.torch.Pipeline("1f1b", {"P": 2, "M": 2}, stage_fn, models.loss_fn, timeout=5)
    x, mask, target = models.batch(0, 4)
    pipe.step(x, mask=mask, target=target)
    x, mask, target = models.batch(1, 6)
    if rank == 0:
        expect(PipelineError, ["rank 0, stage 0, F of micro-batch 0", "((3, 8) float64",
                               "the first such message was ((2, 8) float64", "static_shapes=False"],
               lambda: pipe.step(x, mask=mask, target=target))
        print("PASS reshape", flush=True)
        os._exit(0)
    expect(PipelineError, ["rank 1, stage 1, F of micro-batch 0", "rank 0 -> rank 1"],
           lambda: pipe.step(x, mask=mask, target=target))


def main() -> None:
    torch.set_num_threads(1)
    case = sys.argv[1]
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    if case == "setup":
        setup_cases(rank)
        dist.barrier()
    elif case == "mismatch":
        mismatch_case(rank)
    elif case == "reshape":
        reshape_case(rank)
    elif case in ("dies", "hangs"):
        if rank == 0:
            fault_case(rank, case)
        else:
            fault_case_peer(case)
    print("PASS", case, flush=True)
    os._exit(0)  # no process-group teardown with a failed peer


def fault_case_peer(mode: str) -> None:
    pipe = pipec.torch.Pipeline("1f1b", {"P": 2, "M": 4}, lambda s: Faulty(mode), models.loss_fn,
                                timeout=3)
    for step in range(3):
        x, mask, target = models.batch(step, 8)
        pipe.step(x, mask=mask, target=target)
    print("FAIL: the faulty rank finished", flush=True)
    sys.exit(1)


if __name__ == "__main__":
    main()
