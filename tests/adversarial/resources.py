#!/usr/bin/env python3
"""Resource cases: inputs at and beyond pipec's limits, at sizes that run in
seconds, and odd files. Each must be refused (or accepted) cleanly: no crash,
no hang, no running out of memory under the cap.
usage: resources.py PIPEC SOURCE_DIR WORK_DIR
"""
import os
import sys
import threading

import harness


def schedule(body="", ranks="P", stages="P", micro="M", place="place stage s -> rank s;",
             program="rank r { for i in 0..M { F; } for i in 0..M { B; } }", costs=""):
    return (f"schedule t(P = 2, M = 2) {{\n  ranks {ranks};\n  stages {stages};\n"
            f"  microbatches {micro};\n  {place}\n  {costs}\n  {body}\n  {program}\n}}\n")


def else_if_chain(n):
    arms = " else ".join(f"if r == {i} {{ F; B; }}" for i in range(n))
    return schedule(program=f"rank r {{ for i in 0..M {{ {arms} }} }}")


def source_cases():
    """(name, .pipe text, extra arguments) run through check and sim."""
    deep = 100_000
    yield "deep-parens", schedule(body="let x = " + "(" * deep + "1" + ")" * deep + ";"), []
    yield "deep-braces", schedule(program="rank r " + "{ " * deep + "F; B;" + " }" * deep), []
    yield "unclosed-parens", schedule(body="let x = " + "(" * 1_000_000), []
    yield "deep-unary", schedule(body="let x = " + "- " * deep + "1;"), []
    yield "long-sum", schedule(body="let x = " + " + ".join(["1"] * 50_000) + ";"), []
    yield "else-if-1000", else_if_chain(1000), []
    yield "else-if-50000", else_if_chain(50_000), []
    yield "junk-line", "@" * 1_000_000 + "\n", []
    yield "junk-in-schedule", schedule(body="$" * 1_000_000), []
    yield "many-lets", schedule(body="".join(f"let x{i} = {i};\n" for i in range(50_000))), []
    yield "many-statements", schedule(
        program="rank r { " + "F(0, mb = 0); " * 20_000 + "}"), []
    # Topology at and past the limits.
    yield "ranks-2^20", schedule(ranks="1048576", stages="2"), []
    yield "ranks-2^20+1", schedule(ranks="1048577"), []
    yield "stages-2^24", schedule(stages="16777216", place="place stage s -> rank s % P;"), []
    yield "microbatches-2^30", schedule(micro="1073741824"), []
    yield "microbatches-int64", schedule(micro="9223372036854775807"), []
    yield "integer-too-large", schedule(micro="99999999999999999999999999"), []
    yield "sparse-slots", schedule(stages="2",
                                   place="place stage s -> rank s chunk s * 8000000;"), []
    # Loops near the iteration limit (200 000 000) and past it.
    yield "loop-over-limit", schedule(program="rank r { for i in 0..200000001 { } }"), []
    yield "loop-int64", schedule(program="rank r { for i in 0..9223372036854775807 { } }"), []
    yield "nested-loops", schedule(
        program="rank r { for i in 0..100000 { for j in 0..100000 { } } }"), []
    yield "loop-negative", schedule(
        program="rank r { for i in -9223372036854775807..9223372036854775807 { } }"), []
    yield "ops-over-limit", schedule(micro="20000000"), []
    yield "overflow", schedule(body="let x = 9223372036854775807 * 2;"), []
    yield "min-division", schedule(body="let x = (-9223372036854775807 - 1) / -1;"), []
    # Costs: huge, non-finite and negative zero, in the file and on the command line.
    for value in ("1.0e400", "1e400", "inf", "nan", "0.0e0", "1.0e-400", "-0.0"):
        yield f"cost-{value}", schedule(costs=f"costs {{ F = {value}; B = {value}; }}"), []
    for value in ("1e400", "inf", "-inf", "nan", "-0.0", "1e-400", "1e308"):
        yield f"cost-flag-{value}", schedule(), ["--cost", f"F={value}", "--cost", f"B={value}"]


def main():
    pipec, source_dir, workdir = harness.main_args()
    suite = harness.Suite("resources", pipec, workdir)
    example = harness.examples(source_dir)[0]
    with open(example, "rb") as f:
        valid = f.read()

    for name, text, extra in source_cases():
        path = harness.write(os.path.join(workdir, name + ".pipe"), text)
        data = text.encode()
        suite.case(f"check {name}", [pipec, "check", path, *extra], input_text=data)
        suite.case(f"sim {name}", [pipec, "sim", path, "--timeline", "--svg", os.devnull,
                                   "--trace", os.devnull, *extra], input_text=data)

    for value in ("1e400", "Infinity", "NaN", "-0.0"):
        costs = harness.write(os.path.join(workdir, f"costs-{value}.json"),
                              f'{{"F": {value}, "B": 2}}')
        suite.case(f"sim --costs {value}", [pipec, "sim", example, "--costs", costs])

    # Odd file names: a newline, spaces, a leading dash (an option to the
    # command line, so a usage error unless after --).
    for name in ("new\nline.pipe", "with spaces .pipe", "-dash.pipe", "tab\t\x01.pipe"):
        path = harness.write(os.path.join(workdir, name), valid)
        suite.case(f"check {name!r}", [pipec, "check", path])
        suite.case(f"sim {name!r}", [pipec, "sim", path, "--svg", path + ".svg"])
        suite.case(f"check relative {name!r}", [pipec, "check", name], cwd=workdir)
        suite.case(f"check -- {name!r}", [pipec, "check", "--", name], cwd=workdir)

    # Special files: empty, a directory, a FIFO (fed by a writer), standard input.
    suite.case("check /dev/null", [pipec, "check", os.devnull])
    suite.case("import /dev/null", [pipec, "import", "--from", "torch-csv", os.devnull])
    suite.case("check a directory", [pipec, "check", workdir])
    suite.case("import a directory", [pipec, "import", "--from", "torch-csv", workdir])
    suite.case("sim --svg into a directory", [pipec, "sim", example, "--svg", workdir])
    suite.case("check stdin", [pipec, "check", "-"], stdin_bytes=valid)
    for command in (["check"], ["sim"], ["import", "--from", "torch-csv"]):
        fifo = os.path.join(workdir, "fifo")
        if os.path.exists(fifo):
            os.remove(fifo)
        os.mkfifo(fifo)
        data = valid if command[0] != "import" else b"0F0,0B0\n"

        def feed():
            try:
                with open(fifo, "wb") as f:
                    f.write(data)
            except OSError:
                pass
        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        suite.case(f"{command[0]} a FIFO", [pipec, *command, fifo], input_text=data)
        if writer.is_alive():  # pipec never opened it: unblock the writer
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(5)

    # Import: junk and limits in the CSV.
    csv_cases = {
        "junk-line.csv": "x," * 1_000_000,
        "junk-bytes.csv": bytes(range(256)) * 4000,
        "huge-ids.csv": "16777215F1073741823,16777215B1073741823\n",
        "many-rows.csv": "0F0,0B0\n" + "\n" * 1_100_000,
        "long-row.csv": ",".join(f"0F{m},0B{m}" for m in range(100_000)) + "\n",
        "deep-pairs.csv": "(" * 100_000 + "\n",
    }
    for name, text in csv_cases.items():
        path = harness.write(os.path.join(workdir, name), text)
        out = os.path.join(workdir, name + ".pipe")
        data = text if isinstance(text, bytes) else text.encode()
        if suite.case(f"import {name}", [pipec, "import", "--from", "torch-csv", path, "-o", out],
                      input_text=data) and os.path.exists(out):
            # What import writes, check accepts.
            suite.case(f"check imported {name}", [pipec, "check", out], input_text=data,
                       allowed=(0,))
    return suite.finish()


if __name__ == "__main__":
    sys.exit(main())
