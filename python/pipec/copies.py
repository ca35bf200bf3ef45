"""Replicated stages (``copies 2``: DualPipe, Chimera): a stage held by two
slots, each with its own module.  The copies start identical (copy 0's
parameters are broadcast to the others when the pipeline is built) and stay
identical: after every step the copies' gradients of that step are summed
(locally, then one all-reduce of one flat buffer per stage between the ranks
holding them), so every copy holds the full gradient and any optimizer steps
them alike.  Gradients left in ``.grad`` from before the step (accumulation
over several steps) are set aside during the step and added back, so only the
step's own gradients are exchanged.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from .errors import PipelineError, PipelineTimeout
from .program import Program


def gather_ints(values: List[int], group=None) -> List[List[int]]:
    """Every rank's list of integers, by tensor collectives: torch's
    all_gather_object needs numpy, which torch (our one dependency) does not."""
    device = (torch.device("cuda", torch.cuda.current_device())
              if dist.get_backend(group) == "nccl" else torch.device("cpu"))
    size = dist.get_world_size(group)
    length = torch.tensor([len(values)], dtype=torch.int64, device=device)
    lengths = [torch.zeros_like(length) for _ in range(size)]
    dist.all_gather(lengths, length, group=group)
    longest = max(1, max(int(t.item()) for t in lengths))
    padded = torch.zeros(longest, dtype=torch.int64, device=device)
    padded[:len(values)] = torch.tensor(values, dtype=torch.int64)
    gathered = [torch.zeros_like(padded) for _ in range(size)]
    dist.all_gather(gathered, padded, group=group)
    return [g[:int(n.item())].tolist() for g, n in zip(gathered, lengths)]


def _encode_shapes(shapes: List[Tuple[int, ...]]) -> List[int]:
    """Parameter shapes as one list of integers: count, then ndim and dims of each."""
    out = [len(shapes)]
    for shape in shapes:
        out += [len(shape), *shape]
    return out


def pipelines_of_job(group) -> List[Tuple[int, ...]]:
    """The global ranks of every pipeline of the job, sorted (every rank calls)."""
    mine = tuple(dist.get_process_group_ranks(group))
    if len(mine) == dist.get_world_size():
        return [mine]
    everyone = gather_ints(list(mine))
    return sorted(set(tuple(p) for p in everyone))


def _wait(work, timeout_s: float, what: str) -> None:
    try:
        if work.wait(timeout=timedelta(seconds=timeout_s)) is False:
            raise PipelineTimeout(f"{what}: not done within {timeout_s:g} s")
    except (PipelineTimeout, PipelineError):
        raise
    except Exception as error:
        text = str(error).splitlines()[0] if str(error) else type(error).__name__
        lowered = text.lower()
        cls = PipelineTimeout if "timeout" in lowered or "timed out" in lowered else PipelineError
        raise cls(f"{what}: {text}") from None


class CopySync:
    def __init__(self, program: Program, rank: int, modules: Dict[int, torch.nn.Module],
                 group, pipelines: List[Tuple[int, ...]], timeout_s: float):
        self.rank = rank
        self.timeout_s = timeout_s
        mine = tuple(dist.get_process_group_ranks(group))
        self.stages = []  # (stage, [local modules by copy], group or None, src global rank)
        for stage, copies in enumerate(program.stage_copies):
            if len(copies) < 2:
                continue
            holders = sorted({r for r, _ in copies})
            sub = None
            if len(holders) > 1:  # new_group is collective over the job: every pipeline's
                for pipeline in pipelines:
                    g = dist.new_group([pipeline[r] for r in holders],
                                       timeout=timedelta(seconds=timeout_s))
                    if pipeline == mine:
                        sub = g
            local = [modules[chunk] for r, chunk in copies if r == rank]
            if local:
                src = mine[copies[0][0]]
                self.stages.append((stage, local, sub, src, copies[0][0] == rank))
        self._stash: Dict[torch.nn.Parameter, Optional[torch.Tensor]] = {}

    def _params(self, module) -> List[torch.nn.Parameter]:
        return [p for p in module.parameters()]

    def broadcast_initial(self) -> None:
        """Makes every copy start as copy 0."""
        for stage, local, sub, src, holds_first in self.stages:
            shapes = [[tuple(p.shape) for p in self._params(m)] for m in local]
            if any(s != shapes[0] for s in shapes):
                raise PipelineError(f"rank {self.rank}: stage {stage}'s copies have different "
                                    "parameters: stage_fn must build the same module each call")
            if sub is not None:
                encoded = _encode_shapes(shapes[0])
                if any(g != encoded for g in gather_ints(encoded, group=sub)):
                    raise PipelineError(f"rank {self.rank}: stage {stage}'s copies on the ranks "
                                        "holding it have different parameters: stage_fn must "
                                        "build the same module for a stage on every rank")
                with torch.no_grad():
                    flat = torch.cat([p.detach().reshape(-1) for p in self._params(local[0])]) \
                        if self._params(local[0]) else None
                    if flat is not None:
                        _wait(dist.broadcast(flat, src, group=sub, async_op=True), self.timeout_s,
                              f"rank {self.rank}: broadcasting stage {stage}'s initial parameters")
                        self._unflatten_into(flat, self._params(local[0]), data=True)
            with torch.no_grad():
                for other in local[1:]:
                    for p, q in zip(self._params(local[0]), self._params(other)):
                        q.copy_(p)

    @staticmethod
    def _unflatten_into(flat, params, data: bool):
        at = 0
        for p in params:
            n = p.numel()
            part = flat[at: at + n].view_as(p)
            if data:
                p.copy_(part)
            else:
                p.grad = part.clone()
            at += n

    def before_step(self) -> None:
        self._stash = {}
        for _, local, _, _, _ in self.stages:
            for module in local:
                for p in self._params(module):
                    self._stash[p] = p.grad
                    p.grad = None

    def after_step(self) -> None:
        for stage, local, sub, _, _ in self.stages:
            params = [self._params(m) for m in local]
            flat = None
            for copy in params:
                part = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                                  for p in copy]) if copy else None
                flat = part if flat is None else flat + part
            if flat is None:
                continue
            if sub is not None:
                _wait(dist.all_reduce(flat, group=sub, async_op=True), self.timeout_s,
                      f"rank {self.rank}, stage {stage}: summing the copies' gradients")
            for copy in params:
                self._unflatten_into(flat, copy, data=False)
                for p in copy:
                    old = self._stash.get(p)
                    if old is not None:
                        p.grad = p.grad + old
        self._stash = {}
