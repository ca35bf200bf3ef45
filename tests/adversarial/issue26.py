#!/usr/bin/env python3
"""Replays every compiler-side reproducer of issue 26 (the second adversarial
round: thread pools, limits enforced in one command and not another, numbers
that are not finite, synth's time cap and bound, the language server's memory,
pictures at a fixed scale, the small items), each under the harness's 2 GB
address-space cap and a timeout. A case passes when pipec exits 0, 1 or 2 in
time with no signal, and, where the issue named what was wrong with the output,
when that is fixed too (JSON that parses, a bound below the makespan, an SVG of
bounded width, a bounded number of diagnostics).

usage: issue26.py PIPEC SOURCE_DIR WORK_DIR
"""
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import harness


def expect(suite, label, condition, why):
    """Records a failure when `condition` is false (beyond the harness's own)."""
    suite.runs += 1
    if not condition:
        suite.failures.append((label, [], why, None))


def run_output(argv, stdin_bytes=None, timeout=harness.TIMEOUT_S):
    """(exit status, stdout, stderr) under the cap; status None on a timeout."""
    try:
        proc = subprocess.run(argv, input=stdin_bytes, capture_output=True, timeout=timeout,
                              preexec_fn=harness._limit_memory)
    except subprocess.TimeoutExpired:
        return None, b"", b""
    return proc.returncode, proc.stdout, proc.stderr


def thread_cases(suite, pipec, examples):
    # 26.1: -j 128 under 2 GB used to end in SIGABRT (std::system_error).
    # The whole domain (968 points), so that a pool would start all 128 threads.
    for jobs in ("128", "100000"):
        suite.case(f"check -j {jobs}", [pipec, "check", f"{examples}/1f1b.pipe", "-j", jobs])


def fmt_cases(suite, pipec, workdir):
    # 26.1: fmt had no error limit: a 100 KB junk line printed 100 000 errors.
    for size in (100_000, 300_000):
        path = harness.write(os.path.join(workdir, f"junk{size}.pipe"), "@" * size + "\n")
        status, out, err = run_output([pipec, "fmt", path])
        label = f"fmt junk line of {size} bytes"
        expect(suite, label, status == 1, f"exit status {status}, expected 1")
        errors = err.decode(errors="replace").count("error:")
        expect(suite, label, 0 < errors <= 21, f"{errors} errors printed, expected at most 21")


def synth_cases(suite, pipec, workdir):
    # 26.2: costs near the largest double overflow when summed: name it.
    status, _, err = run_output([pipec, "synth", "-D", "P=4", "-D", "M=8", "--max-activations",
                                 "4", "--cost", "F=1e308", "--cost", "B=1e308",
                                 "-o", os.path.join(workdir, "huge.pipe")])
    text = err.decode(errors="replace")
    expect(suite, "synth costs 1e308", status == 1 and "NonFiniteResult" in text and
           "overflow" in text, f"exit {status}: {text[-300:]}")
    # 26.4: --time bounds every phase (here only that it ends; speed is in tests/bench).
    for seconds in ("0.5", "2"):
        suite.case(f"synth P=64 M=312 --time {seconds}",
                   [pipec, "synth", "-D", "P=64", "-D", "M=312", "--max-activations", "64",
                    "--time", seconds, "-o", os.path.join(workdir, "big.pipe")])
    # 26.4: the bound printed 800 above a makespan of 520 (W > B, pairs).
    status, _, err = run_output([pipec, "synth", "--placement", "bidirectional", "-D", "P=4",
                                 "-D", "M=8", "--max-activations", "5", "--overlap", "--cost",
                                 "W=100", "-o", os.path.join(workdir, "bidir.pipe")])
    text = err.decode(errors="replace")
    found = re.search(r"makespan ([0-9.e+]+)(?:, lower bound ([0-9.e+]+))?", text)
    ok = status == 0 and found and (found.group(2) is None or
                                     float(found.group(2)) <= float(found.group(1)) * (1 + 1e-9))
    expect(suite, "synth bound <= makespan (W=100, pairs)", ok, text[-400:])
    expect(suite, "synth prints the cost warnings", "warning:" in text, text[-400:])
    # 26.8: a repeated -D in a file placement.
    status, _, err = run_output([pipec, "synth", "--placement",
                                 os.path.join(SOURCE, "examples", "1f1b.pipe"), "-D", "P=4",
                                 "-D", "P=8", "--max-activations", "4"])
    expect(suite, "synth file placement -D P twice", status == 2 and b"twice" in err,
           err.decode(errors="replace")[-300:])


def svg_cases(suite, pipec, workdir, examples):
    # 26.7: 60 px per unit made 1e300 a picture 1.1e+301 wide.
    for cost in ("1e300", "1e-300", "1"):
        svg = os.path.join(workdir, f"cost{cost}.svg")
        suite.case(f"sim --svg at F={cost}", [pipec, "sim", f"{examples}/1f1b.pipe", "--cost",
                                              f"F={cost}", "--cost", f"B={cost}", "--svg", svg])
        try:
            width = float(ET.parse(svg).getroot().get("width"))
        except (OSError, ET.ParseError, TypeError, ValueError) as error:
            expect(suite, f"svg at F={cost}", False, f"no readable SVG: {error}")
            continue
        expect(suite, f"svg at F={cost} width", 600 <= width <= 4000, f"width {width}")


def json_cases(suite, pipec, examples):
    # 26.2: JSON output is always valid JSON, even for extreme costs.
    for cost in ("1e308", "1e-308", "5e-324"):
        status, out, _ = run_output([pipec, "sim", f"{examples}/1f1b.pipe", "--format", "json",
                                     "--cost", f"F={cost}"])
        if status == 0:
            try:
                json.loads(out)
                valid = True
            except ValueError:
                valid = False
            expect(suite, f"sim json at F={cost}", valid, out[:300])
        else:
            expect(suite, f"sim json at F={cost}", status in (1, 2), f"exit {status}")


def small_cases(suite, pipec, workdir, examples):
    # 26.8: a UTF-8 byte-order mark is accepted.
    with open(f"{examples}/1f1b.pipe", "rb") as f:
        text = f.read()
    path = harness.write(os.path.join(workdir, "bom.pipe"), b"\xef\xbb\xbf" + text)
    suite.case("check with a byte-order mark", [pipec, "check", path], allowed=(0,))
    # 25.21: an unknown subcommand is a usage error whatever follows.
    suite.case("unknown subcommand --help", [pipec, "nosuchcommand", "--help"], allowed=(2,))


def lsp_cases(suite, pipec, examples):
    # 26.5: memory stays bounded across open documents, edits are coalesced and
    # requests are answered while an analysis runs. Four documents of ~2M ops under
    # a small budget; every request must be answered.
    with open(f"{examples}/1f1b.pipe") as f:
        source = f.read()
    big = source.replace("P = 4, M = 8", "P = 16, M = 32768")
    messages = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
                {"jsonrpc": "2.0", "method": "initialized", "params": {}}]
    for k in range(4):
        messages.append({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": f"file:///big{k}.pipe", "languageId": "pipe",
                             "version": 1, "text": big}}})
    for version in range(2, 12):  # ten full-text edits of one document, queued
        messages.append({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": "file:///big0.pipe", "version": version},
            "contentChanges": [{"text": big + f"// edit {version}\n"}]}})
    messages.append({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": "file:///big0.pipe"}, "position": {"line": 0, "character": 0}}})
    messages.append({"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": {}})
    messages.append({"jsonrpc": "2.0", "method": "exit", "params": {}})
    data = b""
    for m in messages:
        body = json.dumps(m).encode()
        data += b"Content-Length: %d\r\n\r\n" % len(body) + body
    status, out, err = run_output([pipec, "lsp", "--memory-budget=300000000"], stdin_bytes=data,
                                  timeout=120)
    expect(suite, "lsp four large documents", status == 0,
           f"exit {status}: {err.decode(errors='replace')[-300:]}")
    expect(suite, "lsp answers the hover and shutdown", b'"id":2' in out and b'"id":3' in out,
           out[-300:])


def plan_cases(suite, pipec):
    # F1 of the campaign: a global batch of 2^20 sequences on 8 GPUs makes
    # layouts of up to 16M ops. Two threads compiling such layouts beside a full
    # cache exhausted 2 GB, and --time did not stop a compilation or a
    # simulation in flight. Now the cache's working budget bounds the ops held,
    # a compilation that cannot end in the time left is not started, and the
    # costing, simulation and --rank-by loops check the time: every run ends in
    # its budget (the harness's timeout is the bound here) with exit 0/1/2 and,
    # when stopped, says so.
    hf = os.path.join(SOURCE, "tests", "unit", "Inputs", "hf")
    runs = [("gpt2", ["--micro-batch-size", "1", "--tp", "2"]),
            ("llama-2-7b", []), ("qwen2-7b", ["--micro-batch-size", "1"]),
            ("mistral-7b", ["--rank-by", "p99", "--jitter", "lognormal:0.1"]),
            # Nothing fits on one GPU: the remedies' re-plans share the budget.
            ("llama-2-7b", ["--gpus", "1"])]
    for model, extra in runs:
        config = os.path.join(hf, model + ".json")
        if not os.path.exists(config):
            expect(suite, f"plan {model}", False, f"no config {config}")
            continue
        argv = [pipec, "plan", "--model", config, "--cluster", "h100", "--gpus", "8",
                "--global-batch", "1048576", "--seq-len", "512", "--time", "8",
                "--format", "json"]
        if "--gpus" in extra:
            argv[argv.index("--gpus") + 1] = extra[extra.index("--gpus") + 1]
            extra = []
        argv += extra
        label = f"plan {model} --global-batch 1048576 {' '.join(extra)}"
        status, out, err = run_output(argv, timeout=40)
        text = err.decode(errors="replace")
        expect(suite, label, status in (0, 1, 2) and not any(
            m in text for m in harness.OOM_MARKS), f"exit {status}: {text[-300:]}")
        if status in (0, 1):
            try:
                json.loads(out)
                valid = True
            except ValueError:
                valid = False
            expect(suite, label + " json", valid, out[:200])


def runtime_cases(suite, pipec, workdir):
    """Reproducers of the built programs (issue 26.6 and the campaign's F4)."""
    exe = os.path.join(workdir, "prog")
    built = subprocess.run([pipec, "build", os.path.join(SOURCE, "examples", "1f1b.pipe"),
                            "--target", "cpu", "-D", "P=2", "-D", "M=2", "-o", exe],
                           capture_output=True)
    if built.returncode != 0:  # no runtime library in this build
        return
    # F4: sizes whose buffers exceed the memory cap ended in std::bad_alloc naming
    # neither option nor size. Now the bytes are computed before allocating.
    for option, value in (("--hidden", "65536"), ("--seq", "65536"),
                          ("--micro-batch-size", "65536"), ("--seq", "1048576")):
        status, _, err = run_output([exe, option, value, "--timeout", "20"])
        text = err.decode(errors="replace")
        expect(suite, f"program {option} {value}",
               status == 2 and option in text and "bytes" in text and "bad_alloc" not in text,
               f"exit {status}: {text[-400:]}")
    # The fresh campaign's finding: with --max-memory raised past the machine the
    # estimate passes and a worker thread's std::bad_alloc ended as "rank 0
    # failed: std::bad_alloc" (exit 4). Now a usage error naming the options.
    status, _, err = run_output([exe, "--hidden", "1", "--seq", "1", "--micro-batch-size",
                                 "65536", "--model", "moe", "--dtype", "fp64", "--check",
                                 "--max-memory", "1e18", "--timeout", "20"])
    text = err.decode(errors="replace")
    expect(suite, "program out of memory in a step",
           status in (0, 2) and (status == 0 or "--micro-batch-size" in text),
           f"exit {status}: {text[-400:]}")
    # --max-memory names itself when it is the cap.
    status, _, err = run_output([exe, "--hidden", "256", "--max-memory", "1000000"])
    text = err.decode(errors="replace")
    expect(suite, "program --max-memory", status == 2 and "--max-memory" in text,
           f"exit {status}: {text[-300:]}")


SOURCE = ""


def main():
    global SOURCE
    pipec, SOURCE, workdir = harness.main_args()
    suite = harness.Suite("issue26", pipec, workdir)
    examples = os.path.join(SOURCE, "examples")
    thread_cases(suite, pipec, examples)
    fmt_cases(suite, pipec, workdir)
    synth_cases(suite, pipec, workdir)
    svg_cases(suite, pipec, workdir, examples)
    json_cases(suite, pipec, examples)
    small_cases(suite, pipec, workdir, examples)
    lsp_cases(suite, pipec, examples)
    plan_cases(suite, pipec)
    runtime_cases(suite, pipec, workdir)
    return suite.finish()


if __name__ == "__main__":
    sys.exit(main())
