"""A checked pipeline program, as ``pipec emit --target json`` writes it.

The compiler has already proved everything a runtime relies on: every op runs
once, every message has one producer and one consumer, the order each rank
posts its sends and receives cannot deadlock, and each rank's live activations
after every op.  This module only reads that document into plain Python
objects and checks that it is one (format, version, counts); it needs no torch.

Example::

    from pipec.program import load_program
    program = load_program("1f1b.json")
    for op in program.ranks[0].ops:
        print(op.kind, op.stage, op.mb)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

FORMAT = "pipec-program"
VERSION = 2  # codegen/ProgramJson.h kProgramJsonVersion; version 1 documents read alike


# The op kinds this package runs. R replays a forward before its backward;
# Offload and Reload move its saved tensors to host memory and back; BPipe's
# transfers move them to a partner rank and back: the owner's Evict sends them to
# the partner's Hold, the partner's Return sends them back to the owner's Load.
TRANSFER_KINDS = ("Evict", "Hold", "Return", "Load")
RUNNABLE_KINDS = ("F", "B", "I", "W", "R", "Offload", "Reload") + TRANSFER_KINDS
MESSAGE_KINDS = ("activation", "gradient", "evicted", "returned")
# A transfer op: the message kind it sends or needs, and whether the rank is the
# message's sender; the owner of the activation is the op's rank for Evict and
# Load, its peer for Hold and Return.
_TRANSFERS = {"Evict": ("evicted", True), "Hold": ("evicted", False),
              "Return": ("returned", True), "Load": ("returned", False)}


class ProgramFormatError(ValueError):
    """The JSON document is not a program this package reads."""


@dataclass(frozen=True)
class Message:
    id: int
    kind: str  # activation (stage -> stage+1), gradient (stage -> stage-1), evicted, returned
    src: int
    dst: int
    channel: int
    stage: int  # the producing stage
    mb: int
    producer_op: int
    consumer_op: int

    @property
    def gradient(self) -> bool:
        return self.kind == "gradient"

    @property
    def saved(self) -> bool:
        """An evicted or returned message: a (stage, mb)'s saved tensors, not a stage's I/O."""
        return self.kind in ("evicted", "returned")


@dataclass(frozen=True)
class Op:
    index: int
    kind: str  # "F", "B", "I", "W", "R" (replays the forward) or a memory op (RUNNABLE_KINDS)
    stage: int
    chunk: int
    copy: int
    mb: int
    step: int
    pair: Optional[str]  # None, "first" (the forward half) or "second"
    frees: bool  # frees (stage, mb)'s activations
    live: int  # activations alive on the rank after this op, as the checker counts
    needs: Tuple[int, ...]  # message ids this op consumes
    sends: Tuple[int, ...]  # message ids this op produces
    recomputed: bool = False  # an F that an R replays: it keeps only its inputs
    peer: Optional[int] = None  # a transfer's partner rank (Evict/Return: to, Hold/Load: from)

    def describe(self) -> str:
        text = f"{self.kind}(stage {self.stage}, micro-batch {self.mb}"
        if self.copy:
            text += f", copy {self.copy}"
        return text + f"), op {self.index}"


@dataclass(frozen=True)
class Slot:
    chunk: int
    stage: int
    copy: int


@dataclass
class RankProgram:
    rank: int
    peak_activations: int
    peak_held_messages: int
    slots: List[Slot]
    ops: List[Op]
    send_order: List[int]
    receive_order: List[int]
    steps: List[List[Op]] = field(default_factory=list)  # ops grouped by step


@dataclass
class Flow:
    name: str
    begin: int
    end: int
    slots: List[Tuple[int, int]]  # stage -> (rank, chunk)


@dataclass
class Program:
    schedule: str
    source: str
    parameters: Dict[str, int]
    num_ranks: int
    num_stages: int
    num_microbatches: int
    copies: int
    flows: List[Flow]
    stage_copies: List[List[Tuple[int, int]]]  # stage -> [(rank, chunk)] by copy
    loss_ranks: List[int]
    messages: List[Message]
    ranks: List[RankProgram]
    microbatch_sizes: List[int] = field(default_factory=list)  # `sizes`; empty: all equal

    def size_of(self, mb: int) -> int:
        """Micro-batch mb's size in the schedule's units (1 without `sizes`)."""
        return self.microbatch_sizes[mb] if self.microbatch_sizes else 1

    def flow_of(self, mb: int) -> Flow:
        for flow in self.flows:
            if flow.begin <= mb < flow.end:
                return flow
        raise ProgramFormatError(f"micro-batch {mb} is in no flow")

    def holder(self, stage: int, mb: int) -> Tuple[int, int]:
        """The (rank, chunk) that runs `stage` for micro-batch `mb`."""
        return self.flow_of(mb).slots[stage]


def _need(obj: dict, key: str, where: str):
    if key not in obj:
        raise ProgramFormatError(f"{where}: missing '{key}'")
    return obj[key]


def parse_program(doc: dict) -> Program:
    """Builds a Program from the decoded JSON document, checking its shape."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ProgramFormatError("not a pipec program (expected \"format\": \"pipec-program\")")
    version = doc.get("version")
    if version not in (1, VERSION):
        raise ProgramFormatError(
            f"program format version {version}, but this pipec package reads version 1 or {VERSION}: "
            "use the pipec compiler that matches this package")
    for i, m in enumerate(_need(doc, "messages", "program")):
        if m.get("kind") not in MESSAGE_KINDS:
            raise ProgramFormatError(f"message {i}: kind {m.get('kind')!r} is not one of "
                                     f"{', '.join(MESSAGE_KINDS)}")
    messages = [
        Message(m["id"], m["kind"], m["from"], m["to"], m["channel"], m["stage"],
                m["mb"], m["producer_op"], m["consumer_op"])
        for m in _need(doc, "messages", "program")
    ]
    for i, m in enumerate(messages):
        if m.id != i:
            raise ProgramFormatError(f"message {i} has id {m.id}")
    ranks = []
    for r, p in enumerate(_need(doc, "programs", "program")):
        for i, o in enumerate(p["ops"]):
            # A kind this runtime does not know is refused by name: running the
            # program without it would keep activations the schedule moved away.
            if o["kind"] not in RUNNABLE_KINDS:
                raise ProgramFormatError(
                    f"rank {r}, op {i}: op kind '{o['kind']}' is not run by this runtime "
                    f"(it runs {', '.join(RUNNABLE_KINDS)}); 'pipec check' and 'pipec sim' "
                    "model memory ops")
            # Memory ops run on the copy stream (the export says so); others name none.
            memory = o["kind"] in ("Offload", "Reload") + TRANSFER_KINDS
            if o.get("stream") != ("copy" if memory else None):
                raise ProgramFormatError(
                    f"rank {r}, op {i} ({o['kind']}): \"stream\" is {o.get('stream')!r}; memory "
                    "ops run on the \"copy\" stream and other ops name none")
        ops = [
            Op(i, o["kind"], o["stage"], o["chunk"], o["copy"], o["mb"], o["step"], o["pair"],
               o["frees"], o["live"], tuple(o["needs"]), tuple(o["sends"]),
               bool(o.get("recomputed", False)), o.get("peer"))
            for i, o in enumerate(p["ops"])
        ]
        rank = RankProgram(p["rank"], p["peak_activations"], p["peak_held_messages"],
                           [Slot(s["chunk"], s["stage"], s["copy"]) for s in p["slots"]], ops,
                           list(p["send_order"]), list(p["receive_order"]))
        if rank.rank != r:
            raise ProgramFormatError(f"program {r} is for rank {rank.rank}")
        for op in ops:
            if op.step == len(rank.steps):
                rank.steps.append([])
            elif op.step != len(rank.steps) - 1:
                raise ProgramFormatError(f"rank {r}, op {op.index}: steps out of order")
            rank.steps[-1].append(op)
        ranks.append(rank)
    program = Program(
        schedule=doc["schedule"], source=doc["source"], parameters=dict(doc["parameters"]),
        num_ranks=doc["ranks"], num_stages=doc["stages"], num_microbatches=doc["microbatches"],
        copies=doc["copies"],
        flows=[Flow(f["name"], f["microbatches"][0], f["microbatches"][1],
                    [tuple(s) for s in f["slots"]]) for f in doc["flows"]],
        stage_copies=[[(c["rank"], c["chunk"]) for c in copies] for copies in doc["stage_copies"]],
        loss_ranks=list(doc["loss_ranks"]), messages=messages, ranks=ranks,
        microbatch_sizes=[int(s) for s in doc.get("microbatch_sizes", [])])
    if program.microbatch_sizes and (len(program.microbatch_sizes) != program.num_microbatches
                                     or min(program.microbatch_sizes) < 1):
        raise ProgramFormatError("microbatch_sizes must give every micro-batch a size of at least 1")
    if len(ranks) != program.num_ranks or len(program.stage_copies) != program.num_stages:
        raise ProgramFormatError("rank or stage count does not match the tables")
    for rank in program.ranks:
        for op in rank.ops:
            _check_transfer(program, rank.rank, op)
    return program


def _check_transfer(program: Program, r: int, op: Op) -> None:
    """A transfer names a partner rank and the one message it sends or needs, both
    agreeing with the op (kind, ranks, stage, micro-batch, op index), and the
    activation's owner (this rank for Evict/Load, the peer for Hold/Return) holds
    (stage, mb) in the op's chunk; any other op names no peer."""
    where = f"rank {r}, op {op.index} ({op.kind} of stage {op.stage}, micro-batch {op.mb})"
    if op.kind not in _TRANSFERS:
        if op.peer is not None:
            raise ProgramFormatError(f"{where}: has a 'peer', which only Evict, Hold, Return "
                                     "and Load have")
        return
    kind, sends = _TRANSFERS[op.kind]
    if not isinstance(op.peer, int) or isinstance(op.peer, bool) \
            or not 0 <= op.peer < program.num_ranks or op.peer == r:
        raise ProgramFormatError(f"{where}: 'peer' must be another rank of the program "
                                 f"(0..{program.num_ranks - 1}, not {r}), not {op.peer!r}")
    mine, other = (op.sends, op.needs) if sends else (op.needs, op.sends)
    if len(mine) != 1 or other:
        raise ProgramFormatError(f"{where}: must {'send' if sends else 'need'} exactly one "
                                 f"{kind} message and {'need' if sends else 'send'} none")
    if not 0 <= mine[0] < len(program.messages):
        raise ProgramFormatError(f"{where}: message {mine[0]} does not exist")
    m = program.messages[mine[0]]
    src, dst = (r, op.peer) if sends else (op.peer, r)
    at = m.producer_op if sends else m.consumer_op
    if (m.kind, m.src, m.dst, m.stage, m.mb, at) != (kind, src, dst, op.stage, op.mb, op.index):
        raise ProgramFormatError(
            f"{where}: its message {m.id} is the {m.kind} of stage {m.stage}, micro-batch {m.mb} "
            f"from rank {m.src} to rank {m.dst} (op {at}), not the {kind} of stage {op.stage}, "
            f"micro-batch {op.mb} from rank {src} to rank {dst} (op {op.index})")
    owner = r if op.kind in ("Evict", "Load") else op.peer
    if not 0 <= op.stage < program.num_stages or \
            program.holder(op.stage, op.mb) != (owner, op.chunk):
        raise ProgramFormatError(f"{where}: rank {owner}'s chunk {op.chunk} does not hold "
                                 f"stage {op.stage} of micro-batch {op.mb}")


def load_program(path: str) -> Program:
    with open(path, encoding="utf-8") as f:
        return parse_program(json.load(f))
