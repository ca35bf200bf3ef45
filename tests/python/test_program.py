"""The JSON program export read back without torch (pipec.program), and
checked against invariants recomputed here independently of the compiler:
every message is produced and consumed by exactly the ops that name it, with
the message's stage and micro-batch; each rank posts a channel's receives in
the order the sender posts its sends; every (stage, micro-batch) is run once
forward and freed once (B, or W after I); `live` and the peak follow from the
ops (a replayed forward, R, stores again what its F dropped after running;
with `sizes` a micro-batch counts its size); every op's chunk holds its
stage; loss ranks hold a last stage; and a document of another version is
refused with a message saying so.

    test_program.py   ($PIPEC: the compiler; runs with any Python 3)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
from pipec.compiler import compile_schedule, resolve_schedule  # noqa: E402
from pipec.program import Program, ProgramFormatError, parse_program  # noqa: E402

CASES = [("gpipe", {"P": 3, "M": 4}), ("1f1b", {"P": 4, "M": 8}),
         ("interleaved_1f1b", {"P": 2, "M": 4, "v": 3}), ("zb_h1", {"P": 4, "M": 6}),
         ("zb_h2", {"P": 3, "M": 5}), ("zbv", {"P": 4, "M": 8}),
         ("dualpipev", {"P": 4, "M": 10}), ("dualpipe", {"P": 4, "M": 8}),
         ("dualpipe", {"P": 6, "M": 14}), ("chimera", {"P": 4, "M": 8}),
         ("1f1b_recompute", {"P": 4, "M": 8}),
         (os.path.join(HERE, "Inputs", "1f1b_sizes.pipe"), {"P": 3, "M": 7}),
         (os.path.join(HERE, "Inputs", "zb_recompute_sizes.pipe"), {"P": 4, "M": 9})]


def check(program: Program, where: str) -> None:
    def bad(message):
        raise SystemExit(f"FAIL {where}: {message}")

    seen_f, freed = set(), set()
    producers, consumers = {}, {}
    if program.microbatch_sizes and len(program.microbatch_sizes) != program.num_microbatches:
        bad("microbatch_sizes does not give one size per micro-batch")
    size = (lambda mb: program.microbatch_sizes[mb]) if program.microbatch_sizes else (lambda mb: 1)
    for rank in program.ranks:
        slots = {s.chunk: s for s in rank.slots}
        replayed = {(op.stage, op.mb) for op in rank.ops if op.kind == "R"}
        live = peak = 0
        for op in rank.ops:
            if slots[op.chunk].stage != op.stage or slots[op.chunk].copy != op.copy:
                bad(f"rank {rank.rank} op {op.index}: chunk {op.chunk} does not hold stage {op.stage}")
            if program.holder(op.stage, op.mb) != (rank.rank, op.chunk):
                bad(f"rank {rank.rank} op {op.index}: (stage, mb) placed elsewhere")
            key = (op.stage, op.mb)
            if op.kind == "F":
                if key in seen_f:
                    bad(f"forward of {key} twice")
                seen_f.add(key)
            live += size(op.mb) * (1 if op.kind in "FR" else -1 if op.kind in "BW" else 0)
            peak = max(peak, live)
            if op.recomputed != (op.kind == "F" and key in replayed):
                bad(f"rank {rank.rank} op {op.index}: recomputed is {op.recomputed}")
            if op.recomputed:  # counted while it ran, dropped after it
                live -= size(op.mb)
            if op.frees != (op.kind in "BW"):
                bad(f"rank {rank.rank} op {op.index}: frees is {op.frees} on a {op.kind}")
            if op.frees:
                if key in freed:
                    bad(f"{key} freed twice")
                freed.add(key)
            if op.live != live:
                bad(f"rank {rank.rank} op {op.index}: live {op.live}, recomputed {live}")
            for mid in op.sends:
                producers[mid] = (rank.rank, op)
            for mid in op.needs:
                consumers[mid] = (rank.rank, op)
        if peak != rank.peak_activations:
            bad(f"rank {rank.rank}: peak {rank.peak_activations}, recomputed {peak}")
        if live != 0:
            bad(f"rank {rank.rank}: {live} activations never freed")
    everything = {(s, mb) for s in range(program.num_stages) for mb in range(program.num_microbatches)}
    if seen_f != everything or freed != everything:
        bad("not every (stage, micro-batch) runs forward and is freed exactly once")
    for m in program.messages:
        (src, p), (dst, c) = producers.get(m.id, (None, None)), consumers.get(m.id, (None, None))
        if (src, dst) != (m.src, m.dst) or p is None or c is None:
            bad(f"message {m.id}: produced by rank {src}, consumed by rank {dst}")
        if (p.index, c.index) != (m.producer_op, m.consumer_op) or (p.stage, p.mb) != (m.stage, m.mb):
            bad(f"message {m.id}: ops or (stage, mb) disagree")
        wanted = (m.stage + 1) if not m.gradient else (m.stage - 1)
        if c.stage != wanted or c.mb != m.mb:
            bad(f"message {m.id}: consumed by stage {c.stage}, expected {wanted}")
    for rank in program.ranks:
        for channel in {program.messages[mid].channel for mid in rank.receive_order}:
            mine = [mid for mid in rank.receive_order if program.messages[mid].channel == channel]
            sender = program.messages[mine[0]].src
            theirs = [mid for mid in program.ranks[sender].send_order
                      if program.messages[mid].channel == channel]
            if mine != theirs:
                bad(f"channel {channel}: rank {rank.rank} receives in another order than "
                    f"rank {sender} sends")
    last = program.num_stages - 1
    if sorted({f.slots[last][0] for f in program.flows}) != program.loss_ranks:
        bad("loss ranks are not the ranks holding the last stage")


def main() -> int:
    for schedule, sizes in CASES:
        program, _ = compile_schedule(schedule, sizes)
        check(program, f"{schedule} {sizes}")
        print(f"PASS {schedule} {sizes}: {sum(len(r.ops) for r in program.ranks)} ops, "
              f"{len(program.messages)} messages, peaks {[r.peak_activations for r in program.ranks]}")
    text = subprocess.run([os.environ["PIPEC"], "emit", "--target", "json",
                           str(resolve_schedule("1f1b")), "-D", "P=2", "-D", "M=2"],
                          capture_output=True, text=True, check=True).stdout
    doc = json.loads(text)
    doc["version"] = 99
    try:
        parse_program(doc)
        raise SystemExit("FAIL: a version-99 document was accepted")
    except ProgramFormatError as error:
        if "version 99" not in str(error) or "reads version 1" not in str(error):
            raise SystemExit(f"FAIL: unclear version error: {error}")
        print(f"PASS refused: {error}")
    # Offload and Reload are read (the executor runs them), and BPipe's transfers:
    # each with its partner, validated against its message.
    text = subprocess.run([os.environ["PIPEC"], "emit", "--target", "json",
                           str(resolve_schedule("1f1b_offload")), "-D", "P=4", "-D", "M=4"],
                          capture_output=True, text=True, check=True).stdout
    kinds = {op.kind for rank in parse_program(json.loads(text)).ranks for op in rank.ops}
    if not {"Offload", "Reload"} <= kinds:
        raise SystemExit(f"FAIL: 1f1b_offload read without its memory ops: {sorted(kinds)}")
    print(f"PASS read: 1f1b_offload's op kinds {sorted(kinds)}")
    text = subprocess.run([os.environ["PIPEC"], "emit", "--target", "json",
                           str(resolve_schedule("bpipe")), "-D", "P=4", "-D", "M=8"],
                          capture_output=True, text=True, check=True).stdout
    check_bpipe(text)
    return 0


def check_bpipe(text: str) -> None:
    """bpipe at P = 4: rank 0 evicts to rank 3 (T = 3), every transfer read with its
    partner and message; a document that breaks a transfer's rules is refused
    naming the op and what is wrong."""
    program = parse_program(json.loads(text))
    transfers = [(r.rank, op) for r in program.ranks for op in r.ops if op.peer is not None]
    by_kind = {}
    for r, op in transfers:
        by_kind.setdefault(op.kind, []).append((r, op.peer))
    # mb 2..7 of rank 0 leave and come back (T - 1 = 2 stay)
    if sorted(by_kind) != ["Evict", "Hold", "Load", "Return"] or \
            any(len(v) != 6 for v in by_kind.values()) or \
            set(by_kind["Evict"]) != {(0, 3)} or set(by_kind["Hold"]) != {(3, 0)}:
        raise SystemExit(f"FAIL: bpipe P=4 M=8 transfers read as {by_kind}")
    kinds = sorted({m.kind for m in program.messages})
    if kinds != ["activation", "evicted", "gradient", "returned"]:
        raise SystemExit(f"FAIL: bpipe's message kinds read as {kinds}")
    print(f"PASS read: bpipe P=4 M=8: {len(transfers)} transfers between ranks 0 and 3")

    def refused(change, wanted: str, what: str) -> None:
        doc = json.loads(text)
        change(doc)
        try:
            parse_program(doc)
        except ProgramFormatError as error:
            if wanted not in str(error):
                raise SystemExit(f"FAIL: {what}: unclear error: {error}")
            print(f"PASS refused ({what}): {error}")
            return
        raise SystemExit(f"FAIL: {what}: accepted")

    def op(doc, rank, kind, nth=0):
        return [o for o in doc["programs"][rank]["ops"] if o["kind"] == kind][nth]

    refused(lambda d: op(d, 0, "Evict").update(peer=0), "'peer' must be another rank",
            "an Evict to itself")
    refused(lambda d: op(d, 0, "Load").pop("peer"), "'peer' must be another rank",
            "a Load without a peer")
    refused(lambda d: op(d, 3, "Hold").update(peer=4), "'peer' must be another rank",
            "a Hold from rank 4 of 4")
    refused(lambda d: op(d, 1, "F").update(peer=2), "has a 'peer'", "an F with a peer")
    refused(lambda d: op(d, 3, "Hold").update(mb=op(d, 3, "Hold", 1)["mb"]),
            "its message", "a Hold of another micro-batch than its message's")
    refused(lambda d: op(d, 0, "Load").update(needs=list(op(d, 3, "Hold")["needs"])),
            "is the evicted", "a Load that needs an evicted message")
    refused(lambda d: op(d, 0, "Evict").update(peer=2), "from rank 0 to rank 3",
            "an Evict to a rank its message does not go to")
    refused(lambda d: op(d, 3, "Return").update(sends=[]), "must send exactly one",
            "a Return that sends nothing")
    refused(lambda d: op(d, 3, "Return").pop("stream"), "run on the \"copy\" stream",
            "a Return without its stream")
    refused(lambda d: d["messages"][0].update(kind="activations"), "is not one of",
            "an unknown message kind")
    return 0


if __name__ == "__main__":
    sys.exit(main())
