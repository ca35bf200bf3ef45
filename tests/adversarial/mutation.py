#!/usr/bin/env python3
"""Token and byte mutations of the example schedules, through `check` and `sim`.

tokens: delete, duplicate, swap or replace one to three tokens (replacements
        from the language's keywords and punctuation and from numbers at and
        beyond pipec's limits);
bytes:  flip, insert or delete one to four bytes, anywhere.
Deterministic (fixed seed). Op and iteration limits are lowered so that a
mutation that makes a schedule large is refused quickly rather than run.
usage: mutation.py tokens|bytes PIPEC SOURCE_DIR WORK_DIR
"""
import os
import random
import re
import sys

import harness

CASES = {"tokens": 3000, "bytes": 2000}
BATCH = 250
LIMITS = ["--max-ops", "200000", "--max-iterations", "2000000"]

TOKEN = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|[A-Za-z_]\w*'
                   rb'|\d+\.\d+(?:[eE][+-]?\d+)?|\d+|->|\.\.|&&|\|\||[<>=!]=|\S', re.S)
REPLACEMENTS = [
    b"schedule", b"require", b"ranks", b"stages", b"microbatches", b"copies", b"place",
    b"stage", b"rank", b"chunk", b"flow", b"costs", b"let", b"for", b"in", b"if", b"else",
    b"mb", b"F", b"B", b"I", b"W", b"P", b"M", b"r", b"s", b"min", b"max", b"(", b")", b"{",
    b"}", b"[", b"]", b";", b",", b":", b"?", b"&", b"&&", b"..", b"->", b"=", b"-", b"+",
    b"*", b"/", b"%", b"<", b"!", b'"', b"/*", b"0", b"1", b"-1", b"1048576", b"1048577",
    b"16777217", b"1073741825", b"4294967296", b"9223372036854775807",
    b"9223372036854775808", b"99999999999999999999999", b"1.0e400", b"0.0", b"\xff",
]


def tokens_of(text):
    """(start, end) of every token that is not a comment."""
    return [(m.start(), m.end()) for m in TOKEN.finditer(text)
            if not m.group().startswith((b"//", b"/*"))]


def mutate_tokens(text, rng):
    spans = tokens_of(text)
    pieces = [text[a:b] for a, b in spans]
    gaps = [text[:spans[0][0]]] + [text[spans[i][1]:spans[i + 1][0]]
                                   for i in range(len(spans) - 1)] + [text[spans[-1][1]:]]
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(pieces))
        op = rng.choice(("delete", "duplicate", "swap", "replace"))
        if op == "delete":
            pieces[i] = b""
        elif op == "duplicate":
            pieces[i] = pieces[i] + b" " + pieces[i]
        elif op == "swap":
            j = rng.randrange(len(pieces))
            pieces[i], pieces[j] = pieces[j], pieces[i]
        else:
            pieces[i] = rng.choice(REPLACEMENTS)
    out = gaps[0]
    for piece, gap in zip(pieces, gaps[1:]):
        out += piece + gap
    return out


def mutate_bytes(text, rng):
    data = bytearray(text)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(data) + 1)
        op = rng.choice(("flip", "insert", "delete"))
        if op == "flip" and i < len(data):
            data[i] ^= 1 << rng.randrange(8)
        elif op == "insert":
            data[i:i] = bytes([rng.choice((0, 0x0a, 0x22, 0x2f, 0x7b, 0x7d, 0x80, 0xc3, 0xff,
                                           rng.randrange(256)))])
        elif i < len(data):
            del data[i]
    return bytes(data)


def main():
    kind = sys.argv.pop(1) if len(sys.argv) > 1 else ""
    if kind not in CASES:
        sys.exit(f"usage: {sys.argv[0]} tokens|bytes PIPEC SOURCE_DIR WORK_DIR")
    pipec, source_dir, workdir = harness.main_args()
    suite = harness.Suite(f"{kind} mutation", pipec, workdir)
    rng = random.Random(0x5eed + len(kind))
    sources = []
    for example in harness.examples(source_dir):
        with open(example, "rb") as f:
            sources.append((os.path.basename(example)[:-len(".pipe")], f.read()))
    mutate = mutate_tokens if kind == "tokens" else mutate_bytes
    paths = []
    for case in range(CASES[kind]):
        stem, text = sources[case % len(sources)]
        paths.append(harness.write(os.path.join(workdir, f"{stem}-{case}.pipe"),
                                   mutate(text, rng)))
    for i in range(0, len(paths), BATCH):
        suite.check_then_sim(paths[i:i + BATCH], LIMITS)
    return suite.finish()


if __name__ == "__main__":
    sys.exit(main())
