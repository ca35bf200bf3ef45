"""Point-to-point messages between the ranks of a pipeline, posted in the order
the compiler proved deadlock-free (comm/CommPlan.h of the compiler).

Each (sender, receiver, kind) is a channel with its own in-order stream of
messages.  On gloo a channel is a tag on the pipeline group (gloo matches by
sender and tag, in order).  On NCCL, where torch puts all traffic between two
ranks on one communicator and stream, a channel gets its own two-rank process
group, so the activations one way and the gradients the other never queue
behind each other (see ``channel_groups``).

BPipe's evicted and returned messages (a (stage, micro-batch)'s saved tensors
on their way to the partner rank and back) use the same channels, posting rule
and deadlines; they always travel with a description of their tensors and the
activation's identity (saved_wire.py), which the receiver checks. Posting one
does not wait: its header receive is posted (after the receives of the
channel's messages before it), and the description's and the tensors' receives
as the parts before them arrive (``poll`` between ops; taking the message waits
for them), so a Hold or a Load does not stall the rank's compute until its tensors
are needed, as the compiler's model has it (a copy-stream op).

Receives follow the posting rule of the communication model: before a step,
every receive of a channel up to and including the one the step needs is
posted, in the sender's order; a message that arrives before its op is held.
Sends are posted when their step is done, in the rank's send order.  Every
wait has a deadline; a timeout or a failed peer raises PipelineTimeout or
PipelineError naming this rank, the op that waited and the message.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.distributed as dist

from .errors import PipelineError, PipelineTimeout
from . import saved_wire
from .program import Message, Program
from .wire import (HEADER_LEN, TensorMeta, decode_header, describe, empty_like_metas,
                   encode_header, metas_of)


def channel_groups(program: Program, pipeline_group, pipelines: List[Tuple[int, ...]],
                   timeout: timedelta) -> Dict[int, object]:
    """One two-rank process group per channel, for every pipeline of the job
    (`pipelines`: each pipeline's global ranks, from copies.pipelines_of_job).

    torch.distributed.new_group is collective over the whole job, so every rank
    creates every pipeline's groups, in the same order, and keeps its own.  Every
    rank of the job must construct its Pipeline at the same point (as a pipeline x
    data-parallel job does)."""
    mine = tuple(dist.get_process_group_ranks(pipeline_group))
    channels = sorted({(m.channel, m.src, m.dst) for m in program.messages})
    groups = {}
    for pipeline in pipelines:
        for channel, src, dst in channels:
            group = dist.new_group([pipeline[src], pipeline[dst]], timeout=timeout)
            if tuple(pipeline) == mine:
                groups[channel] = group
    return groups


@dataclass
class _Posted:
    message: Message
    buffers: List[torch.Tensor]
    works: List[object]
    metas: list  # TensorMeta per tensor; for saved tensors (identity, [SavedMeta])
    # Saved tensors are posted in three parts, each once the one before arrived:
    # the header, the description, the tensors (ready: all posted).
    ready: bool = True
    waiting_op: str = ""
    head: Optional[torch.Tensor] = None
    head_work: object = None
    description: Optional[torch.Tensor] = None
    description_work: object = None
    count: int = 0


@dataclass
class _Pending:
    message: Message
    tensors: List[torch.Tensor]
    works: List[object] = field(default_factory=list)


class Transport:
    def __init__(self, program: Program, rank: int, group, device: torch.device,
                 timeout_s: float, static_shapes: bool, groups: Optional[Dict[int, object]]):
        self.program = program
        self.rank = rank
        self.group = group
        self.device = device
        self.timeout_s = timeout_s
        self.static_shapes = static_shapes
        self.groups = groups  # NCCL: channel -> two-rank group; gloo: None (tags)
        self._global = [dist.get_global_rank(group, r) if group is not None else r
                        for r in range(program.num_ranks)]
        self._metas: Dict[Tuple[int, int, int], List[TensorMeta]] = {}  # (channel, stage, size) -> metas
        self.held_peak = 0
        self.reset()

    # --- per step -----------------------------------------------------------------
    def reset(self) -> None:
        messages = self.program.messages
        self._unposted: Dict[int, deque] = {}
        for mid in self.program.ranks[self.rank].receive_order:
            self._unposted.setdefault(messages[mid].channel, deque()).append(mid)
        self._posted: Dict[int, _Posted] = {}
        self._unfinished: Dict[int, deque] = {}  # channel -> its saved messages still posting
        self._pending_sends: List[_Pending] = []
        self.held_peak = 0

    # --- primitives with deadlines: each wait gets the pipeline's timeout ----------
    def _wait(self, work, what: str) -> None:
        # On CUDA a wait only orders the current stream after the transfer, as
        # PyTorch's schedules do; a timeout there would block the CPU until the
        # transfer is done and serialize the GPU behind Python. NCCL's own
        # watchdog (the process group's timeout) bounds those waits.
        if self.device.type == "cuda":
            try:
                work.wait()
                return
            except Exception as error:
                raise PipelineError(f"{what}: failed: {str(error).splitlines()[0]}") from None
        try:
            ok = work.wait(timeout=timedelta(seconds=self.timeout_s))
        except Exception as error:  # gloo raises on timeout and on a closed peer
            text = str(error)
            if "timeout" in text.lower() or "timed out" in text.lower():
                raise PipelineTimeout(f"{what}: not done within the pipeline's "
                                      f"timeout of {self.timeout_s:g} s (the peer is slow, hung "
                                      f"or dead): {text.splitlines()[0] if text else ''}") from None
            raise PipelineError(f"{what}: failed: "
                                f"{text.splitlines()[0] if text else type(error).__name__} "
                                "(the peer probably failed; see its log)") from None
        if ok is False:
            raise PipelineTimeout(f"{what}: not done within the pipeline's "
                                  f"timeout of {self.timeout_s:g} s")

    def _p2p(self, send: bool, tensor: torch.Tensor, message: Message):
        peer = message.dst if send else message.src
        if self.groups is not None:
            group = self.groups[message.channel]
            op = dist.isend if send else dist.irecv
            return op(tensor, self._global[peer], group=group)
        op = dist.isend if send else dist.irecv
        return op(tensor, self._global[peer], group=self.group, tag=message.channel)

    def _batch(self, send: bool, tensors: Sequence[torch.Tensor], message: Message) -> List:
        if self.groups is not None and len(tensors) > 1:  # NCCL: one group call per message
            peer = self._global[message.dst if send else message.src]
            op = dist.isend if send else dist.irecv
            return dist.batch_isend_irecv(
                [dist.P2POp(op, t, peer, self.groups[message.channel]) for t in tensors])
        return [self._p2p(send, t, message) for t in tensors]

    @staticmethod
    def describe_message(m: Message) -> str:
        what = f"the {m.kind} saved tensors" if m.saved else f"the {m.kind}"
        return (f"{what} of stage {m.stage}, micro-batch {m.mb} "
                f"(message {m.id}, rank {m.src} -> rank {m.dst})")

    @staticmethod
    def owner_of(m: Message) -> saved_wire.Identity:
        """The activation an evicted or returned message carries: (owner, stage, mb)."""
        return (m.src if m.kind == "evicted" else m.dst, m.stage, m.mb)

    # --- receives -----------------------------------------------------------------
    def _post_saved(self, m: Message, waiting_op: str) -> None:
        """An evicted or returned message: queued on its channel; its header receive
        is posted once the messages before it on the channel have posted theirs."""
        posted = _Posted(m, [], [], [], ready=False, waiting_op=waiting_op)
        self._posted[m.id] = posted
        self._unfinished.setdefault(m.channel, deque()).append(posted)
        self._advance(posted, block=False)

    def _advance(self, p: _Posted, block: bool) -> bool:
        """Posts what it can of a saved-tensor message's receives (all of them,
        waiting, with block); True once all are posted. A channel's receives are
        matched in posting order, so a message's header is posted only after every
        receive of the messages before it on the channel."""
        if p.ready:
            return True
        m = p.message
        queue = self._unfinished[m.channel]
        while queue[0] is not p:
            if not self._advance(queue[0], block):
                return False
        what = f"{p.waiting_op}: {self.describe_message(m)}"
        if p.head is None:
            p.head = torch.empty(saved_wire.HEAD_LEN, dtype=torch.int64, device=self.device)
            p.head_work = self._p2p(False, p.head, m)
        if p.description is None:
            if not block and not p.head_work.is_completed():
                return False
            self._wait(p.head_work, f"{what}: receiving the header")
            try:
                sent_id, ident, p.count, length, inline = saved_wire.decode_head(p.head.cpu())
            except ValueError as error:
                raise PipelineError(f"{what}: {error}") from None
            if (sent_id, ident) != (m.id, self.owner_of(m)):
                raise PipelineError(
                    f"{what}: rank {m.src} sent {saved_wire.describe_identity(ident)} as message "
                    f"{sent_id}, not {saved_wire.describe_identity(self.owner_of(m))}: the ranks "
                    "disagree on which activation this is")
            p.metas = [ident]
            if inline is not None:
                p.description = inline
            else:  # a long description: a message of its own
                p.description = torch.empty(length, dtype=torch.int64, device=self.device)
                p.description_work = self._p2p(False, p.description, m)
        if p.description_work is not None:
            if not block and not p.description_work.is_completed():
                return False
            self._wait(p.description_work, f"{what}: receiving the description")
        try:
            metas = saved_wire.decode_description(p.description.cpu(), p.count)
        except ValueError as error:
            raise PipelineError(f"{what}: {error}") from None
        p.buffers = [torch.empty(meta.shape, dtype=meta.dtype, device=self.device)
                     for meta in metas]
        p.works = self._batch(False, saved_wire.nonempty(p.buffers), m)
        p.metas = (p.metas[0], metas)
        p.ready = True
        queue.popleft()
        if not queue:
            del self._unfinished[m.channel]
        return True

    def poll(self) -> None:
        """Posts the next receives of saved-tensor messages whose parts have arrived."""
        for queue in list(self._unfinished.values()):
            while queue and self._advance(queue[0], block=False):
                pass

    @property
    def unfinished(self) -> bool:
        return bool(self._unfinished)

    def _post_one(self, mid: int, waiting_op: str) -> None:
        m = self.program.messages[mid]
        if m.saved:
            self._post_saved(m, waiting_op)
            return
        if m.channel in self._unfinished:  # (the export gives saved tensors channels of their own)
            self._advance(self._unfinished[m.channel][-1], block=True)
        key = (m.channel, m.stage, self.program.size_of(m.mb))  # sizes: a shape per size
        metas = self._metas.get(key) if self.static_shapes else None
        if metas is None:
            header = torch.empty(HEADER_LEN, dtype=torch.int64, device=self.device)
            work = self._p2p(False, header, m)
            self._wait(work, f"{waiting_op}: receiving the header of {self.describe_message(m)}")
            try:
                metas = decode_header(header.cpu())
            except ValueError as error:
                raise PipelineError(f"{waiting_op}: {self.describe_message(m)}: {error}") from None
            self._metas[key] = metas
        buffers = empty_like_metas(metas, self.device)
        self._posted[mid] = _Posted(m, buffers, self._batch(False, buffers, m), metas)

    def post_until(self, mid: int, waiting_op: str) -> None:
        """Posts every receive of `mid`'s channel up to and including `mid`."""
        if mid in self._posted:
            return
        queue = self._unposted[self.program.messages[mid].channel]
        while queue:
            first = queue.popleft()
            self._post_one(first, waiting_op)
            if first == mid:
                break
        self.held_peak = max(self.held_peak, len(self._posted))

    def take(self, mid: int, waiting_op: str) -> Tuple[List[torch.Tensor], List[TensorMeta]]:
        self.post_until(mid, waiting_op)
        posted = self._posted.pop(mid)
        self._advance(posted, block=True)
        for work in posted.works:
            self._wait(work, f"{waiting_op}: waiting for {self.describe_message(posted.message)}")
        return posted.buffers, posted.metas

    # --- sends --------------------------------------------------------------------
    def send(self, mid: int, tensors: Sequence[torch.Tensor], sending_op: str) -> None:
        m = self.program.messages[mid]
        # Activations: which tensors carry a gradient back is read before detaching.
        metas = [TensorMeta(t.dtype, False, tuple(t.shape)) for t in tensors] if m.gradient \
            else metas_of(tensors)
        tensors = [t.detach().contiguous() for t in tensors]
        key = (m.channel, m.stage, self.program.size_of(m.mb))  # sizes: a shape per size
        known = self._metas.get(key) if self.static_shapes else None
        pending = _Pending(m, tensors)
        if known is None:
            self._metas[key] = metas
            header = encode_header(metas, self.device)
            pending.tensors = [header] + pending.tensors
            pending.works.append(self._p2p(True, header, m))
        elif known != metas:
            raise PipelineError(
                f"{sending_op}: sends {describe(metas)} as {self.describe_message(m)}, "
                f"but the first such message was {describe(known)}; with static_shapes=True "
                "(the default) stage outputs keep their shapes; pass static_shapes=False to "
                "send a header with every message")
        pending.works += self._batch(True, tensors, m)
        self._pending_sends.append(pending)
        self._reap()

    def send_saved(self, mid: int, tensors: Sequence[torch.Tensor],
                   ident: saved_wire.Identity, sending_op: str) -> None:
        """An Evict's or a Return's message: activation `ident`'s saved tensors."""
        m = self.program.messages[mid]
        try:
            metas = saved_wire.metas_of_saved(tensors)
        except TypeError as error:
            raise PipelineError(f"{sending_op}: {error}") from None
        head, description = saved_wire.encode(mid, ident, metas, self.device)
        tensors = [t.detach().contiguous() for t in tensors]
        pending = _Pending(m, [head] + ([description] if description is not None else []) + tensors)
        pending.works.append(self._p2p(True, head, m))
        if description is not None:
            pending.works.append(self._p2p(True, description, m))
        body = saved_wire.nonempty(tensors)
        if body:
            pending.works += self._batch(True, body, m)
        self._pending_sends.append(pending)
        self._reap()

    def _reap(self) -> None:
        # Completed sends release their buffers early; the rest wait in finish().
        still = []
        for p in self._pending_sends:
            if all(w.is_completed() for w in p.works):
                continue
            still.append(p)
        self._pending_sends = still

    def finish(self) -> None:
        """Waits for every send of the step; checks every receive was taken."""
        for p in self._pending_sends:
            for work in p.works:
                self._wait(work, f"rank {self.rank}, end of step: sending "
                                 f"{self.describe_message(p.message)}")
        self._pending_sends = []
        left = [mid for mid in self._posted] + [m for q in self._unposted.values() for m in q]
        if left:
            raise PipelineError(f"rank {self.rank}: end of step: {len(left)} messages were "
                                "never consumed (the program and the executor disagree)")
