#!/usr/bin/env python3
"""A randomized adversarial campaign over the newest surfaces of pipec: `plan`
(mutated Hugging Face configs, hostile cluster files, absurd sizes), `synth`
(extreme sizes, costs, budgets, placements, --time), `fmt` (junk, huge lines,
deep nesting, byte-order marks, invalid UTF-8), `lsp` (scripted JSON-RPC
sessions: framing errors, huge documents, rapid edits, requests on closed
documents), `sim`'s variability flags (--jitter, --samples, --slow,
--topology) and a built CPU program (bad option values, special files as
--data/--load/--save/--trace, truncated and corrupted checkpoints).

Every run is under the harness's 2 GB address-space cap and a timeout. A run
passes when it exits with a documented status (0, 1 or 2; a program also 3 or
4) and prints valid JSON where --format json was asked. A signal, a timeout,
another status, memory exhaustion, or output that is not JSON is a finding,
printed with the command that reproduces it.

Deterministic: the inputs come from a fixed seed. `--scale N` multiplies the
number of random inputs (1, the default, is the bounded subset CI runs; the
closing note of issue 26 records a run at a larger scale).

usage: campaign.py PIPEC SOURCE_DIR WORK_DIR [--scale N] [--surfaces a,b,...]
                   [--program EXE]
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import threading
import time

import harness

EXTREME_INTS = ["0", "-1", "1", "3", "7", "65536", "1048577", "2147483648", "4294967296",
                "9223372036854775807", "9223372036854775808", "99999999999999999999999",
                "1e3", "abc", "", "0x10", " 4", "4.5"]
EXTREME_REALS = ["0", "-0", "-1", "1e-300", "5e-324", "1e308", "1e400", "-1e400", "inf",
                 "-inf", "nan", "1e-9", "1", "abc", "", "1e", "0x1p3"]
JSON_EXTREMES = [0, -1, 1, 2**31, 2**63, 2**64, 10**30, 1e308, 1e-308, 5e-324, -0.0, 0.5,
                 "x", "", None, True, [], {}, [1, 2], {"a": 1}]
JSON_LITERALS = ["1e999", "-1e999", "NaN", "Infinity", "-Infinity", "1e-999", "00", "+1",
                 "0x10", "[[[[[[[[[[]]]]]]]]]]"]


# A program whose --max-memory was raised past the machine passes the estimate and
# may then run out of memory for real: the designed outcome is this named usage
# error (exit 2), which counts as a clear refusal, not as memory exhaustion.
NAMED_OUT_OF_MEMORY = ("out of memory with --hidden", "ran out of memory during a step; lower")


def _named_refusal(argv, status, err):
    return (status == 2 and "--max-memory" in argv
            and any(mark in err for mark in NAMED_OUT_OF_MEMORY))


class Campaign:
    """Counts the inputs per surface and keeps every finding."""

    def __init__(self, workdir, timeout, jobs, show=()):
        self.workdir = workdir
        self.show = set(show)  # exit statuses whose inputs are printed (--show-status)
        self.timeout = timeout
        self.counts = {}
        self.statuses = {}  # surface -> {exit status or "timeout": runs}
        self.findings = []
        self.lock = threading.Lock()
        self.pending = []
        self.jobs = jobs

    def file(self, name, data):
        return harness.write(os.path.join(self.workdir, name), data)

    def add(self, surface, argv, stdin_bytes=None, json_out=False, allowed=(0, 1, 2),
            timeout=None, check=None, label=None):
        """Queues one input; run() runs the queue."""
        self.pending.append((surface, argv, stdin_bytes, json_out, allowed,
                             timeout or self.timeout, check, label))

    def _one(self, item):
        surface, argv, stdin_bytes, json_out, allowed, timeout, check, label = item
        why = None
        started = time.monotonic()
        try:
            proc = subprocess.run(argv, input=stdin_bytes,
                                  stdin=None if stdin_bytes is not None else subprocess.DEVNULL,
                                  capture_output=True, timeout=timeout,
                                  preexec_fn=harness._limit_memory, cwd=self.workdir)
        except subprocess.TimeoutExpired:
            proc = None
            why = f"timed out after {timeout} s"
        if proc is not None:
            err = proc.stderr.decode("utf-8", "replace")
            if any(mark in err for mark in harness.SANITIZER_MARKS):
                why = "sanitizer report: " + err[-400:]
            elif proc.returncode < 0 or proc.returncode not in allowed:
                why = (f"killed by signal {-proc.returncode}" if proc.returncode < 0
                       else f"exit status {proc.returncode}")
                if any(mark in err for mark in harness.OOM_MARKS):
                    why += " (memory exhausted)"
                why += ": " + err[-400:]
            elif any(mark in err for mark in harness.OOM_MARKS) and not _named_refusal(
                    argv, proc.returncode, err):
                why = f"memory exhausted (exit {proc.returncode}): " + err[-300:]
            elif json_out and proc.stdout.strip():
                try:
                    json.loads(proc.stdout)
                except ValueError as error:
                    why = f"--format json printed invalid JSON ({error}): {proc.stdout[:200]!r}"
            if why is None and check is not None:
                why = check(proc)
        with self.lock:
            self.counts[surface] = self.counts.get(surface, 0) + 1
            status = "timeout" if proc is None else proc.returncode
            seen = self.statuses.setdefault(surface, {})
            seen[status] = seen.get(status, 0) + 1
            if status in self.show:
                last = err.strip().splitlines()[-1:] if proc is not None else ["(timed out)"]
                print(f"  [{surface} exit {status}] {' '.join(map(str, argv))}\n"
                      f"    {last[0] if last else ''}")
            if why:
                self.findings.append((surface, label or "", argv, why,
                                      stdin_bytes, time.monotonic() - started))

    def run(self):
        items, self.pending = self.pending, []
        if self.jobs <= 1:
            for item in items:
                self._one(item)
            return
        index = [0]

        def worker():
            while True:
                with self.lock:
                    if index[0] >= len(items):
                        return
                    item = items[index[0]]
                    index[0] += 1
                self._one(item)
        threads = [threading.Thread(target=worker) for _ in range(self.jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def finish(self):
        total = sum(self.counts.values())
        print("campaign: " + ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items())) +
              f"; {total} inputs, {len(self.findings)} findings")
        for surface, seen in sorted(self.statuses.items()):  # that inputs get past the usage checks
            print(f"  {surface} exit statuses: " +
                  ", ".join(f"{k}: {v}" for k, v in sorted(seen.items(), key=str)))
        for surface, label, argv, why, stdin_bytes, took in self.findings[:40]:
            print(f"\nFINDING [{surface}] {label} ({took:.1f} s)\n  command: " +
                  " ".join(repr(a) if (" " in a or not a) else a for a in argv) + f"\n  {why}")
            if stdin_bytes is not None:
                shown = stdin_bytes if len(stdin_bytes) <= 600 else (
                    stdin_bytes[:300] + b" ... " + stdin_bytes[-300:])
                print(f"  stdin ({len(stdin_bytes)} bytes): {shown!r}")
        if self.findings:
            print(f"\nreproducing inputs are kept under {self.workdir}")
        return 1 if self.findings else 0


def mutate_json(obj, rng):
    """One structural mutation of a JSON object: a field set to an extreme,
    removed, or duplicated as a literal that Python cannot express."""
    obj = dict(obj)
    keys = list(obj)
    op = rng.randrange(4)
    key = rng.choice(keys) if keys else "x"
    if op == 0:
        obj[key] = rng.choice(JSON_EXTREMES)
    elif op == 1 and keys:
        del obj[key]
    elif op == 2:
        obj[rng.choice(["n_layer", "num_hidden_layers", "hidden_size", "num_experts_per_tok",
                        "n_routed_experts", "intermediate_size", "num_attention_heads",
                        "num_key_value_heads", "vocab_size", "moe_intermediate_size",
                        "first_k_dense_replace", "kv_lora_rank", "q_lora_rank",
                        "max_position_embeddings", "zzz"])] = rng.choice(JSON_EXTREMES)
    text = json.dumps(obj)
    if op == 3:  # a literal spliced in as raw text
        text = text.replace(json.dumps(obj[key]) if key in obj else "{}",
                            rng.choice(JSON_LITERALS), 1)
    return text


def plan_cases(c, pipec, source, rng, scale, help_text):
    hf = os.path.join(source, "tests", "unit", "Inputs", "hf")
    configs = {}
    for name in sorted(os.listdir(hf)):
        if name.endswith(".json"):
            with open(os.path.join(hf, name)) as f:
                configs[name] = json.load(f)
    small = ["gpt2.json", "llama-2-7b.json", "mixtral-8x7b.json", "deepseek-v2-lite.json"]
    # A budget well inside the harness's timeout: a plan must end within it.
    extra = ["--time", "10"] if "--time=" in help_text else []
    base = ["--cluster", "h100", "--gpus", "8", "--global-batch", "16", "--seq-len", "1024"]

    # Mutated configs, text and JSON.
    for k in range(40 * scale):
        name = rng.choice(small)
        text = mutate_json(configs[name], rng)
        if rng.random() < 0.15:  # truncated
            text = text[:rng.randrange(len(text))]
        path = c.file(f"plan-config-{k}.json", text)
        fmt = rng.choice(["text", "json"])
        c.add("plan", [pipec, "plan", "--model", path, *base, "--format", fmt, *extra],
              json_out=fmt == "json", label=f"mutated {name}")

    # Cluster files: each field at an extreme, also non-finite literals.
    fields = ["gpus", "gpus_per_node", "inter_node_bandwidth", "inter_node_latency",
              "intra_node_bandwidth", "intra_node_latency", "memory_bytes", "peak_flops",
              "sustained_fraction"]
    topo = ["nvlink_domain", "nics_per_node", "nics_per_gpu", "pipeline_stride"]
    values = ["0", "-1", "1e-300", "5e-324", "1e300", "1e999", "-1e999", "NaN", "Infinity",
              "-0.0", "9223372036854775807", "18446744073709551616", "\"8\"", "null", "[]"]
    cluster_paths = []
    for field in fields:
        for value in (values if scale > 1 else values[::3]):
            path = c.file(f"cluster-{field}-{len(cluster_paths)}.json",
                          f'{{ "preset": "h100", "{field}": {value} }}')
            cluster_paths.append(path)
    for field in topo:
        for value in values[::2]:
            path = c.file(f"cluster-topo-{field}-{len(cluster_paths)}.json",
                          f'{{ "preset": "h100", "topology": {{ "{field}": {value} }} }}')
            cluster_paths.append(path)
    for path in cluster_paths:
        c.add("plan", [pipec, "plan", "--model", os.path.join(hf, "gpt2.json"), "--cluster", path,
                       "--global-batch", "16", "--seq-len", "1024", "--format", "json", *extra],
              json_out=True, label="cluster field")
    for text in ["", "{", "[]", "null", '{"preset": "h1000"}', '{"preset": 7}',
                 '{"gpus": 8}', '{"preset": "h100", "preset": "h800"}', "\xef\xbb\xbf{}",
                 '{"preset": "h100", "topology": []}', '{"preset":"h100","zz":1}',
                 '{"preset": "h100", "topology": {"nics_per_node": 3}}']:
        path = c.file(f"cluster-junk-{len(cluster_paths)}.json", text)
        cluster_paths.append(path)
        c.add("plan", [pipec, "plan", "--model", os.path.join(hf, "gpt2.json"), "--cluster", path,
                       "--global-batch", "16", "--seq-len", "1024", *extra], label="cluster junk")
    for special in ["/dev/zero", "/dev/null", source, "/nonexistent.json"]:
        c.add("plan", [pipec, "plan", "--model", special, *base, *extra], label="special model")
        c.add("plan", [pipec, "plan", "--model", os.path.join(hf, "gpt2.json"), "--cluster",
                       special, "--global-batch", "16", "--seq-len", "1024", *extra],
              label="special cluster")

    # Absurd sizes, one flag at a time, then random combinations.
    flags = {"--gpus": EXTREME_INTS + ["16777216", "1073741824"],
             "--global-batch": EXTREME_INTS + ["1073741824"],
             "--seq-len": EXTREME_INTS + ["1025", "1048576"],
             "--micro-batch-size": EXTREME_INTS, "--tp": EXTREME_INTS, "--ep": EXTREME_INTS,
             "--zero": ["0", "3", "4", "-1", "x"], "--recompute": ["none", "full", "x", ""]}
    for flag, vals in flags.items():
        for v in vals:
            argv = [pipec, "plan", "--model", os.path.join(hf, "gpt2.json"), *base, flag, v,
                    "--format", "json", *extra]
            c.add("plan", argv, json_out=True, label=f"{flag} {v}")
    names = sorted(configs)
    for k in range(25 * scale):
        argv = [pipec, "plan", "--model", os.path.join(hf, rng.choice(names)),
                "--cluster", rng.choice(["h100", "h800", "h200"] + cluster_paths[:6])]
        valid = {"--gpus": ["1", "3", "8", "24", "1024", "16384", "65536"],
                 "--global-batch": ["1", "3", "64", "4096", "1048576"],
                 "--seq-len": ["1", "2", "1024", "32768", "131072"],
                 "--micro-batch-size": ["1", "3", "64"], "--tp": ["1", "2", "8", "16"],
                 "--ep": ["1", "8", "64"], "--zero": ["0", "1", "3"],
                 "--recompute": ["none", "selective", "full"]}
        bad = rng.choice(list(flags)) if rng.random() < 0.2 else None
        for flag, vals in flags.items():
            if flag == bad:
                argv += [flag, rng.choice(vals)]
            elif rng.random() < 0.6:
                argv += [flag, rng.choice(valid[flag])]
        if "--global-batch" not in argv:
            argv += ["--global-batch", rng.choice(["8", "64", "1024"])]
        if "--seq-len" not in argv:
            argv += ["--seq-len", rng.choice(["512", "4096"])]
        fmt = rng.choice(["text", "json"])
        argv += ["--format", fmt, *extra]
        c.add("plan", argv, json_out=fmt == "json", label="combination")
    # Schedule files given to plan: a file with a bad domain and junk.
    junk = c.file("plan-junk.pipe", "schedule x(P = 4) { @@@ }\n")
    c.add("plan", [pipec, "plan", "--model", os.path.join(hf, "gpt2.json"), *base, junk, *extra])
    c.add("plan", [pipec, "plan", "--model", os.path.join(hf, "gpt2.json"), *base,
                   os.path.join(source, "examples", "1f1b.pipe"), "/dev/zero", *extra])


def synth_cases(c, pipec, source, rng, scale, workdir):
    out = ["-o", os.path.join(workdir, "synth-out.pipe")]
    placements = ["one", "interleaved", "v", "bidirectional", "bogus", "",
                  os.path.join(source, "examples", "1f1b.pipe"),
                  os.path.join(source, "examples", "zbv.pipe"), "/dev/zero", workdir]
    sizes = ["0", "1", "2", "4", "64", "1025", "-1", "2147483648", "x", "99999999999999999999"]
    costs = ["F", "B", "W", "I", "FB", "X", "F[0]", "F[99]", "F[-1]"]
    valid_costs = ["0", "1e-300", "5e-324", "1e-9", "0.5", "1", "3", "100", "1e6", "1e300",
                   "1e308"]
    for k in range(60 * scale):
        # Valid but extreme inputs, and in a third of them one invalid value.
        p = rng.choice([1, 2, 3, 4, 8, 16, 64])
        m = rng.choice([1, 2, 4, 8, 16, 64, 256])
        argv = [pipec, "synth", "--placement", rng.choice(placements[:4] + placements[6:8]),
                "-D", f"P={p}", "-D", f"M={m}", "--max-activations",
                str(rng.choice([1, p, 2 * p, m, 3 * m]))]
        if "interleaved" in argv and rng.random() < 0.7:
            argv += ["-D", "v=" + rng.choice(["1", "2", "3", "4"])]
        for _ in range(rng.randrange(5)):
            argv += ["--cost", f"{rng.choice(costs[:5] + ['F[0]', 'B[1]'])}="
                               f"{rng.choice(valid_costs)}"]
        for flag in ("--overlap", "--exact", "--no-split"):
            if rng.random() < 0.2:
                argv.append(flag)
        if rng.random() < 0.2:
            argv += ["--iterations", rng.choice(["0", "1", "1000000", "18446744073709551615"])]
        if rng.random() < 0.2:
            argv += ["--seed", rng.choice(["0", "7", "18446744073709551615"])]
        argv += ["--time", rng.choice(["0.001", "0.5", "2"])]
        if rng.random() < 0.33:
            bad = rng.randrange(6)
            if bad == 0:
                argv[3] = rng.choice(placements[4:6] + placements[8:])
            elif bad == 1:
                argv[5] = "P=" + rng.choice(sizes)
            elif bad == 2:
                argv[7] = "M=" + rng.choice(sizes)
            elif bad == 3:
                argv[9] = rng.choice(sizes)
            elif bad == 4:
                argv += ["--cost", f"{rng.choice(costs)}={rng.choice(EXTREME_REALS)}"]
            else:
                argv[-1] = rng.choice(EXTREME_REALS)
        c.add("synth", argv + out, label="random")
    # Cost files.
    for k, text in enumerate(['{"F": 1e999}', '{"F": -1}', '{"F": "x"}', "[]", "{",
                              '{"F": [1, 2, 3]}', '{"F": NaN}', '{"F": 1e308, "B": 1e308}',
                              '{"stages": [1e308]}', '{"F": 0, "B": 0, "W": 0}']):
        path = c.file(f"synth-costs-{k}.json", text)
        c.add("synth", [pipec, "synth", "--placement", "one", "-D", "P=4", "-D", "M=8",
                        "--max-activations", "4", "--costs", path, "--time", "2", *out],
              label="cost file")


def fmt_cases(c, pipec, source, rng, scale):
    examples = harness.examples(source)
    texts = []
    for path in examples:
        with open(path, "rb") as f:
            texts.append(f.read())
    bodies = [
        b"", b"\xef\xbb\xbf", b"\xef\xbb\xbf" + texts[0], b"\xef\xbb\xbf\xef\xbb\xbf" + texts[0],
        b"\xfe\xff" + texts[0], b"\xff\xfe" + texts[0].decode().encode("utf-16-le"),
        b"\x00" * 10000, b"\xff" * 100000, b"\xc3" * 50000, b"\xed\xa0\x80" * 10000,
        b"schedule " + b"\xf0\x9f\x98\x80" * 10000, texts[0].replace(b"\n", b"\r"),
        texts[0].replace(b"\n", b"\r\n"), texts[0] + b"\x00", texts[0][: len(texts[0]) // 2],
        b"// " + b"x" * 2_000_000 + b"\n" + texts[0], b"x" * 500_000,
        b"schedule s(P = 4) { let x = " + b"(" * 50_000 + b"1" + b")" * 50_000 + b"; }",
        b"schedule s(P = 4) { rank r " + b"{ " * 50_000 + b"F;" + b" }" * 50_000 + b" }",
        b"schedule s(P = 4) { let x = " + b"1 + " * 200_000 + b"1; }",
        b"/*" * 100_000, b'"' * 100_001, b"\t" * 1_000_000, b"\n" * 1_000_000,
        (texts[0] + b"\n") * 200,
    ]
    for k in range(120 * scale):  # byte and line mutations of the examples
        text = bytearray(rng.choice(texts))
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(text) + 1)
            op = rng.randrange(5)
            if op == 0:
                text[at:at] = bytes([rng.randrange(256)])
            elif op == 1 and text:
                del text[at:at + rng.randint(1, 20)]
            elif op == 2:
                text[at:at] = rng.choice([b"{", b"}", b"(", b")", b"//", b"/*", b"\n", b"\r",
                                          b"\xff", b"\xe2\x80\xae", b"\t" * 100, b" " * 5000])
            elif op == 3:
                line = text[:at].rfind(b"\n")
                text[at:at] = text[line + 1:at] * rng.randint(1, 50)
            else:
                text = text[:at]
        bodies.append(bytes(text))
    paths = [c.file(f"fmt-{k}.pipe", body) for k, body in enumerate(bodies)]
    for path in paths:
        c.add("fmt", [pipec, "fmt", path])
        c.add("fmt", [pipec, "fmt", "--check", path])
    for k in range(0, len(paths), 3):  # in place, on copies
        copy = path_copy = paths[k] + ".inplace.pipe"
        shutil.copy(paths[k], copy)
        c.add("fmt", [pipec, "fmt", "-i", path_copy])
    c.add("fmt", [pipec, "fmt", *paths[:40]])
    c.add("fmt", [pipec, "fmt", "-"], stdin_bytes=bodies[2])
    c.add("fmt", [pipec, "fmt", "-"], stdin_bytes=b"\xff" * 13_000_000)
    for special in ["/dev/zero", "/dev/null", source, "/nonexistent.pipe"]:
        c.add("fmt", [pipec, "fmt", special])
    c.add("fmt", [pipec, "fmt", "-i", "/dev/null"])
    c.add("fmt", [pipec, "fmt", "-i", "--check", paths[2]])


def frame(message):
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def lsp_cases(c, pipec, source, rng, scale):
    with open(os.path.join(source, "examples", "1f1b.pipe")) as f:
        example = f.read()
    init = [frame({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}),
            frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})]
    end = [frame({"jsonrpc": "2.0", "id": 9999, "method": "shutdown"}),
           frame({"jsonrpc": "2.0", "method": "exit"})]

    def doc(uri, text, version=1):
        return frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": uri, "languageId": "pipe", "version": version,
                             "text": text}}})

    def change(uri, text, version):
        return frame({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}})

    def request(i, method, params):
        return frame({"jsonrpc": "2.0", "id": i, "method": method, "params": params})

    def answered(ids):
        def check(proc):
            missing = [i for i in ids if b'"id":%d' % i not in proc.stdout.replace(b" ", b"")]
            return f"requests {missing} never answered" if missing else None
        return check

    uri = "file:///a.pipe"
    methods = ["textDocument/hover", "textDocument/definition", "textDocument/formatting",
               "textDocument/completion", "textDocument/documentSymbol", "nosuch/method",
               "$/cancelRequest", "textDocument/references"]
    positions = [{"line": 0, "character": 0}, {"line": -1, "character": -1},
                 {"line": 2**31, "character": 2**31}, {"line": 2**63, "character": 0},
                 {"line": 1.5, "character": "x"}, None, {}, [], {"line": 10, "character": 3}]
    weird_params = [None, [], "x", 7, {"textDocument": None}, {"textDocument": {"uri": 5}},
                    {"textDocument": {"uri": "file:///closed.pipe"}, "position": positions[0]}]
    # Well-framed sessions: random requests on open, closed and unknown documents.
    for k in range(30 * scale):
        msgs = list(init)
        ids = []
        docs = [uri, "file:///b.pipe", "untitled:x", "file:///%ZZ", ""]
        opened = set()
        for step in range(rng.randint(5, 40)):
            op = rng.randrange(7)
            d = rng.choice(docs)
            if op == 0:
                text = example
                if rng.random() < 0.5:
                    at = rng.randrange(len(text))
                    text = text[:at] + rng.choice(["@", "{", "}", "\u202e", "\x00", "(" * 1000,
                                                   "P" * 100000]) + text[at:]
                msgs.append(doc(d, text, rng.choice([1, -1, 2**62])))
                opened.add(d)
            elif op == 1:
                msgs.append(change(d, rng.choice([example, "", "junk {", example * 3]),
                                   rng.choice([2, 1, 0, -5, 2**53])))
            elif op == 2:
                msgs.append(frame({"jsonrpc": "2.0", "method": "textDocument/didClose",
                                   "params": {"textDocument": {"uri": d}}}))
                opened.discard(d)
            elif op == 3:
                msgs.append(frame({"jsonrpc": "2.0", "method": "textDocument/didChange",
                                   "params": {"textDocument": {"uri": d, "version": 3},
                                              "contentChanges": [{"range": {
                                                  "start": {"line": 99, "character": 0},
                                                  "end": {"line": -1, "character": 5}},
                                                  "text": "x"}]}}))
            elif op == 4:
                i = 100 + step
                ids.append(i)
                msgs.append(request(i, rng.choice(methods),
                                    rng.choice(weird_params) if rng.random() < 0.3 else
                                    {"textDocument": {"uri": d},
                                     "position": rng.choice(positions),
                                     "options": {"tabSize": rng.choice([2, -1, 2**40])}}))
            elif op == 5:  # a burst of rapid edits
                for v in range(rng.randint(10, 60)):
                    msgs.append(change(d, example + f"// {v}\n" + "x" * rng.randrange(3), v + 2))
            else:
                msgs.append(frame(rng.choice([b"{}", b"[]", b"null", b"{\"jsonrpc\":\"2.0\"}",
                                              b"{\"id\": {}, \"method\": 5}", b"\xff\xfe",
                                              b"[" * 10000 + b"]" * 10000,
                                              b"{\"id\":1,\"method\":\"initialize\"}"])))
        c.add("lsp", [pipec, "lsp"], stdin_bytes=b"".join(msgs + end), timeout=c.timeout,
              check=answered(ids + [9999]), allowed=(0, 1), label=f"session {k}")
    # Framing errors: each alone, then followed by a valid request.
    framings = [b"Content-Length: 5\r\n\r\n{}", b"Content-Length: -1\r\n\r\n{}",
                b"Content-Length: 99999999999999999999\r\n\r\n{}",
                b"Content-Length: 9223372036854775807\r\n\r\n",
                b"Content-Length: 2000000000\r\n\r\n" + b"x" * 1000,
                b"Content-Length: x\r\n\r\n{}", b"Content-Length: 2\n\n{}",
                b"Content-Length:2\r\n\r\n{}", b"Content-Type: json\r\n\r\n{}",
                b"\r\n\r\n", b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
                b"X" * 100_000 + b"\r\n\r\n", b"Content-Length: 0\r\n\r\n",
                b"Content-Length: 4\r\n\r\nnull", b"Content-Length: 2\r\n\r\n[]",
                b"\x00" * 1000, b"Content-Length: 1e3\r\n\r\n{}",
                b"Content-Length: 00000000000000000000000002\r\n\r\n{}"]
    for k, bad in enumerate(framings):
        c.add("lsp", [pipec, "lsp"], stdin_bytes=b"".join(init) + bad, allowed=(0, 1, 2),
              label=f"framing {k}")
        c.add("lsp", [pipec, "lsp"], stdin_bytes=bad + b"".join(init + end), allowed=(0, 1, 2),
              label=f"framing {k} then a session")
    # Huge documents and many documents.
    big = example.replace("P = 4, M = 8", "P = 16, M = 8192")
    huge_text = "// " + "x" * 11_000_000 + "\n"
    msgs = init + [doc("file:///huge.pipe", huge_text),
                   request(1, "textDocument/hover", {"textDocument": {"uri": "file:///huge.pipe"},
                                                     "position": {"line": 0, "character": 5}})]
    c.add("lsp", [pipec, "lsp"], stdin_bytes=b"".join(msgs + end), check=answered([1, 9999]),
          allowed=(0, 1), label="11 MB document")
    msgs = init + [doc("file:///over.pipe", "x" * 13_000_000)] + [
        request(1, "textDocument/formatting", {"textDocument": {"uri": "file:///over.pipe"},
                                               "options": {}})]
    c.add("lsp", [pipec, "lsp"], stdin_bytes=b"".join(msgs + end), check=answered([1, 9999]),
          allowed=(0, 1), label="13 MB document (over the input cap)")
    msgs = list(init)
    for d in range(12 * scale):
        msgs.append(doc(f"file:///many{d}.pipe", big))
        msgs.append(request(d + 1, "textDocument/hover", {
            "textDocument": {"uri": f"file:///many{d}.pipe"}, "position": {"line": 3, "character": 3}}))
    c.add("lsp", [pipec, "lsp", "--memory-budget=200000000"], stdin_bytes=b"".join(msgs + end),
          check=answered(list(range(1, 12 * scale + 1)) + [9999]), allowed=(0, 1),
          timeout=max(c.timeout, 120), label="many large documents under a budget")
    for budget in ["0", "-1", "x", "1", "99999999999999999999999"]:
        c.add("lsp", [pipec, "lsp", f"--memory-budget={budget}"],
              stdin_bytes=b"".join(init + [doc(uri, example)] + end), allowed=(0, 1, 2),
              label=f"--memory-budget={budget}")


def sim_cases(c, pipec, source, rng, scale, help_text):
    if "--jitter" not in help_text:
        return
    example = os.path.join(source, "examples", "1f1b.pipe")
    trace_files = [c.file("jitter-trace-junk.json", "{"), c.file("jitter-trace-empty.json", ""),
                   c.file("jitter-trace-nan.json", '{"traceEvents": [{"dur": NaN}]}'),
                   c.file("jitter-trace-neg.json",
                          '{"traceEvents": [{"name": "F", "ph": "X", "ts": 0, "dur": -5}]}'),
                   "/dev/zero", source, "/nonexistent"]
    jitters = ([f"{kind}:{v}" for kind in ("lognormal", "normal") for v in EXTREME_REALS] +
               [f"trace:{p}" for p in trace_files] + ["bogus:1", "", ":", "lognormal"])
    samples = ["0", "1", "-1", "1000", "1000000000", "18446744073709551616", "x", "1e3"]
    slows = ["0=2", "-1=2", "99999=2", "0=0", "0=-1", "0=nan", "0=inf", "0=1e308", "0=1e-308",
             "x", "0=", "=2", "0=2=3"]
    topologies = [c.file("topo-zero.json", '{"preset": "h100", "topology": {"nics_per_node": 0}}'),
                  c.file("topo-huge.json",
                         '{"preset": "h100", "topology": {"nvlink_domain": 9223372036854775807}}'),
                  c.file("topo-nan.json", '{"preset": "h100", "intra_node_bandwidth": NaN}'),
                  c.file("topo-tiny.json",
                         '{"preset": "h100", "inter_node_bandwidth": 1e-300, '
                         '"intra_node_bandwidth": 1e-300}'),
                  c.file("topo-junk.json", "{{{"), "/dev/zero", "bogus-preset", "h100"]
    good_cv = ["0", "1e-300", "0.1", "1", "10", "1e6", "1e308"]
    good_jitters = [f"{kind}:{v}" for kind in ("lognormal", "normal") for v in good_cv]
    good = {"--jitter": good_jitters, "--samples": ["1", "2", "50", "100000"],
            "--seed": ["0", "18446744073709551615"],
            "--slow": ["0=1.1", "1=1e-300", "0=1e300", "1=1e308", "0=5e-324"],
            "--topology": topologies[3:4] + ["h100", "h800"],
            "--threads": ["1", "2", "100000"]}
    bad = {"--jitter": jitters, "--samples": samples, "--seed": ["-1", "x"], "--slow": slows,
           "--topology": topologies, "--threads": ["0", "-1"]}
    for k in range(60 * scale):
        argv = [pipec, "sim", rng.choice([example, os.path.join(source, "examples", "zbv.pipe"),
                                          os.path.join(source, "examples", "dualpipe.pipe")]),
                "-D", "P=" + rng.choice(["2", "4", "8"]), "-D", "M=" + rng.choice(["4", "8", "16"])]
        wrong = rng.choice(list(bad)) if rng.random() < 0.25 else None
        for flag in good:
            if flag == wrong:
                argv += [flag, rng.choice(bad[flag])]
            elif rng.random() < (0.9 if flag == "--jitter" else 0.35):
                argv += [flag, rng.choice(good[flag])]
        if rng.random() < 0.2:
            argv.append("--sensitivity")
        if rng.random() < 0.15:
            argv += ["--rank-by", rng.choice(["mean", "p99"]), "--compare",
                     os.path.join(source, "examples", "gpipe.pipe")]
        elif rng.random() < 0.2:
            argv += ["--svg", os.path.join(c.workdir, "sim.svg")]
        fmt = "text" if "--compare" in argv else rng.choice(["text", "json"])
        argv += ["--format", fmt]
        c.add("sim", argv, json_out=fmt == "json", label="variability flags")


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def program_cases(c, exe, rng, scale, workdir):
    """A built CPU program: option values, special files, checkpoints."""
    allowed = (0, 1, 2, 3, 4)
    base = [exe, "--timeout", "20"]
    help_text = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
    options = []
    for line in help_text.splitlines():
        words = line.split()
        if words and words[0].startswith("--") and words[0] not in ("--help",):
            takes = len(words) > 1 and (words[1].isupper() or "|" in words[1] or
                                        words[1] in ("N", "PATH", "SECONDS", "DIR", "FILE"))
            options.append((words[0], takes))
    values = EXTREME_INTS + EXTREME_REALS + ["mlp", "moe", "empty", "adamw", "sgd", "fp64",
                                             "/dev/zero", "/dev/full", workdir]
    if scale == 1:  # CI's subset: every other value
        values = values[::2]
    for name, takes in options:
        for v in (values if takes else [None]):
            argv = base + ([name, v] if v is not None else [name])
            c.add("program", argv, allowed=allowed, label=f"{name} {v}")
    for k in range(30 * scale):  # combinations, small sizes
        argv = list(base)
        for name, takes in rng.sample(options, min(len(options), rng.randint(2, 5))):
            argv += [name, rng.choice(["1", "2", "4", "16", "0.5", "mlp", "moe"])] if takes else [name]
        c.add("program", argv, allowed=allowed, label="combination")
    # Special files as data, load, save and trace.
    fifo = os.path.join(workdir, "fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    link_dir = os.path.join(workdir, "ckpt-link")
    os.makedirs(link_dir, exist_ok=True)
    link = os.path.join(link_dir, "checkpoint.bin")
    if not os.path.lexists(link):
        os.symlink("/dev/zero", link)
    fifo_dir = os.path.join(workdir, "ckpt-fifo")
    os.makedirs(fifo_dir, exist_ok=True)
    if not os.path.exists(os.path.join(fifo_dir, "checkpoint.bin")):
        os.mkfifo(os.path.join(fifo_dir, "checkpoint.bin"))
    for flag in ("--data", "--load", "--save", "--trace"):
        for target in ("/dev/zero", "/dev/null", "/dev/full", fifo, workdir, link_dir, fifo_dir,
                       "/nonexistent/x", "/proc/self/mem", ""):
            c.add("program", base + [flag, target], allowed=allowed, label=f"{flag} {target}")
    c.run()
    # Checkpoints: save one, then truncate it and corrupt it (with the checksum
    # mended, so the fields themselves are attacked).
    good = os.path.join(workdir, "ckpt-good")
    shutil.rmtree(good, ignore_errors=True)
    proc = subprocess.run(base + ["--steps", "2", "--save", good], capture_output=True)
    path = os.path.join(good, "checkpoint.bin")
    if proc.returncode != 0 or not os.path.exists(path):
        c.findings.append(("program", "save", base, "could not save a checkpoint: " +
                           proc.stderr.decode(errors="replace")[-300:], None, 0))
        return
    with open(path, "rb") as f:
        data = f.read()
    body = data[:-8]
    variants = []
    for cut in sorted({0, 4, 8, 12, 16, 24, 28, 40, len(body) // 2, len(data) - 9, len(data) - 1}):
        variants.append(("truncated", data[:cut]))
    variants.append(("extended", data + b"\0" * 64))
    n_identity = struct.unpack_from("<I", body, 24)[0]
    fields = {"version": (8, "<I"), "element": (12, "<I"), "steps": (16, "<q"),
              "identity length": (24, "<I"), "copies": (28 + n_identity, "<I"),
              "stage": (32 + n_identity, "<i"), "parameters": (36 + n_identity, "<I"),
              "name length": (40 + n_identity, "<I")}
    extremes = {"<I": [0, 1, 8, 2**31, 2**32 - 1], "<i": [-1, 2**31 - 1, -2**31, 99],
                "<q": [2**63 - 1, -2**63, -1, 2**62, 2**62 + 1]}
    for name, (at, fmtc) in fields.items():
        for value in extremes[fmtc]:
            b = bytearray(body)
            struct.pack_into(fmtc, b, at, value)
            variants.append((f"{name}={value}", bytes(b) + struct.pack("<Q", fnv1a(bytes(b)))))
    for k in range(20 * scale):
        b = bytearray(body)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        variants.append((f"random bytes {k}", bytes(b) + struct.pack("<Q", fnv1a(bytes(b)))))
    for k, (name, content) in enumerate(variants):
        d = os.path.join(workdir, f"ckpt-{k}")
        os.makedirs(d, exist_ok=True)
        harness.write(os.path.join(d, "checkpoint.bin"), content)
        c.add("program", base + ["--steps", "1", "--load", d], allowed=allowed,
              label=f"checkpoint {name}")


def fresh_cases(c, pipec, source, rng, scale, workdir, help_text):
    """The third round's mutation ideas (issue 26's closing campaign), run at any
    scale above CI's: plan over every Hugging Face config at extreme sizes and
    flags, synth at extreme sizes and flags, fmt of mutated library and
    include files, language-server request storms."""
    hf = os.path.join(source, "tests", "unit", "Inputs", "hf")
    configs = sorted(os.path.join(hf, n) for n in os.listdir(hf) if n.endswith(".json"))
    extra = ["--time", "10"] if "--time=" in help_text else []
    sizes = {"--global-batch": ["1", "1048576", "1073741824", "9223372036854775807"],
             "--seq-len": ["1", "131072", "1048576", "2147483647"],
             "--gpus": ["1", "8", "1024", "16777216", "2147483647"]}
    flags = [[], ["--zero", "3"], ["--recompute", "full"], ["--tp", "8"], ["--ep", "64"],
             ["--micro-batch-size", "65536"], ["--rank-by", "p99", "--jitter", "lognormal:1"],
             ["--rank-by", "mean", "--jitter", "normal:1e308", "--samples", "100000"]]
    for config in configs:  # every config x every extreme of one size
        for flag, values in sizes.items():
            for value in values:
                argv = [pipec, "plan", "--model", config, "--cluster", "h100", "--gpus", "8",
                        "--global-batch", "64", "--seq-len", "1024"]
                argv[argv.index(flag) + 1] = value
                c.add("plan", argv + rng.choice(flags) + ["--format", "json"] + extra,
                      json_out=True, label=f"every config: {flag} {value}")
    for k in range(30 * scale):  # every config x random extremes together
        argv = [pipec, "plan", "--model", rng.choice(configs), "--cluster",
                rng.choice(["h100", "a100", "b200"])]
        for flag, values in sizes.items():
            argv += [flag, rng.choice(values)]
        fmt = rng.choice(["text", "json"])
        c.add("plan", argv + rng.choice(flags) + ["--format", fmt] + extra,
              json_out=fmt == "json", label="every config: extremes together")
    out = ["-o", os.path.join(workdir, "synth-fresh.pipe")]
    for k in range(20 * scale):
        p = rng.choice(["128", "256", "1024", "65536"])
        m = rng.choice(["1024", "4096", "1048576"])
        argv = [pipec, "synth", "--placement", rng.choice(["one", "v", "bidirectional",
                                                           "interleaved"]),
                "-D", f"P={p}", "-D", f"M={m}", "--max-activations",
                rng.choice(["0", "1", p, "2147483647"]),
                "--time", rng.choice(["0.001", "1", "3"])]
        for flag in ("--overlap", "--exact", "--no-split"):
            if rng.random() < 0.3:
                argv.append(flag)
        c.add("synth", argv + out, label="extreme sizes")
    # fmt of the library's include files and every example, mutated by swapping
    # and duplicating whole lines (structure-aware, unlike byte mutations).
    texts = []
    for folder in (os.path.join(source, "examples"), os.path.join(source, "examples", "include")):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".pipe"):
                with open(os.path.join(folder, name), "rb") as f:
                    texts.append(f.read())
    for k in range(60 * scale):
        lines = rng.choice(texts).split(b"\n")
        for _ in range(rng.randint(1, 6)):
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            op = rng.randrange(3)
            if op == 0:
                lines[i], lines[j] = lines[j], lines[i]
            elif op == 1:
                lines[i:i] = [lines[j]] * rng.randint(1, 200)
            else:
                del lines[i]
        path = c.file(f"fmt-fresh-{k}.pipe", b"\n".join(lines))
        c.add("fmt", [pipec, "fmt", path], label="line mutation")
        c.add("fmt", [pipec, "fmt", "--check", path], label="line mutation --check")
    # Language-server storms: thousands of requests, opens and closes in one session.
    with open(os.path.join(source, "examples", "1f1b.pipe")) as f:
        example = f.read()
    for k in range(2 * scale):
        msgs = [frame({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}),
                frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})]
        for i in range(3000):
            uri = f"file:///storm{i % 7}.pipe"
            op = rng.randrange(4)
            if op == 0:
                msgs.append(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                                   "params": {"textDocument": {"uri": uri, "languageId": "pipe",
                                                               "version": i, "text": example}}}))
            elif op == 1:
                msgs.append(frame({"jsonrpc": "2.0", "method": "textDocument/didClose",
                                   "params": {"textDocument": {"uri": uri}}}))
            else:
                msgs.append(frame({"jsonrpc": "2.0", "id": 1 + i, "method": rng.choice(
                    ["textDocument/hover", "textDocument/formatting", "textDocument/definition",
                     "textDocument/documentSymbol"]), "params": {
                    "textDocument": {"uri": uri}, "position": {"line": i % 40, "character": 3},
                    "options": {"tabSize": 2}}}))
        msgs += [frame({"jsonrpc": "2.0", "id": 999999, "method": "shutdown"}),
                 frame({"jsonrpc": "2.0", "method": "exit"})]
        c.add("lsp", [pipec, "lsp"], stdin_bytes=b"".join(msgs), allowed=(0, 1),
              timeout=max(c.timeout, 120), label=f"storm {k}")


def fresh_program_cases(c, exe, rng, scale, workdir):
    """Programs at extreme sizes together, and damaged token data."""
    allowed = (0, 1, 2, 3, 4)
    base = [exe, "--timeout", "20"]
    big = ["1024", "4096", "65536", "1048576"]
    for k in range(20 * scale):
        argv = base + ["--hidden", rng.choice(["1", "64", "4096", "65536"]),
                       "--seq", rng.choice(["1"] + big), "--micro-batch-size",
                       rng.choice(["1", "64", "65536"]),
                       "--model", rng.choice(["mlp", "moe"]), "--dtype",
                       rng.choice(["fp32", "fp64"]), "--optimizer", rng.choice(["sgd", "adamw"])]
        if rng.random() < 0.3:
            argv.append("--check")
        if rng.random() < 0.3:
            argv += ["--max-memory", rng.choice(["1", "1e9", "1e18"])]
        c.add("program", argv, allowed=allowed, label="extreme sizes together")
    datas = {"odd": b"\x01", "empty": b"", "one-token": b"\x01\x00",
             "huge-ids": b"\xff\xff\xff\xff" * 1000, "short": b"\x01\x00" * 3,
             "random": bytes(rng.randrange(256) for _ in range(10000))}
    for name, content in datas.items():
        path = c.file(f"data-{name}.bin", content)
        for dtype in ("uint16", "uint32"):
            c.add("program", base + ["--data", path, "--data-dtype", dtype], allowed=allowed,
                  label=f"--data {name} {dtype}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pipec")
    parser.add_argument("source")
    parser.add_argument("workdir")
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=harness.TIMEOUT_S)
    parser.add_argument("--surfaces", default="plan,synth,fmt,lsp,sim,program")
    parser.add_argument("--program", help="a built CPU program (default: build one if possible)")
    parser.add_argument("--show-status", default="",
                        help="exit statuses (comma-separated) whose inputs and last error "
                             "line are printed, to inspect documented outcomes such as 4")
    args = parser.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    show = [int(x) if x.lstrip("-").isdigit() else x for x in args.show_status.split(",") if x]
    c = Campaign(args.workdir, args.timeout, args.jobs, show)
    rng = random.Random(args.seed)
    surfaces = args.surfaces.split(",")

    def help_of(command):
        return subprocess.run([args.pipec, command, "--help"], capture_output=True,
                              text=True).stdout

    if "plan" in surfaces:
        plan_cases(c, args.pipec, args.source, rng, args.scale, help_of("plan"))
    if "synth" in surfaces:
        synth_cases(c, args.pipec, args.source, rng, args.scale, args.workdir)
    if "fmt" in surfaces:
        fmt_cases(c, args.pipec, args.source, rng, args.scale)
    if "lsp" in surfaces:
        lsp_cases(c, args.pipec, args.source, rng, args.scale)
    if "sim" in surfaces:
        sim_cases(c, args.pipec, args.source, rng, args.scale, help_of("sim"))
    if args.scale > 1:
        fresh_cases(c, args.pipec, args.source, rng, args.scale, args.workdir, help_of("plan"))
    c.run()
    if "program" in surfaces:
        exe = args.program
        if not exe:
            exe = os.path.join(args.workdir, "prog")
            built = subprocess.run([args.pipec, "build", os.path.join(args.source, "examples",
                                                                      "1f1b.pipe"),
                                    "--target", "cpu", "-D", "P=2", "-D", "M=2", "-o", exe],
                                   capture_output=True)
            if built.returncode != 0:
                print("campaign: no CPU program (the runtime is not built): " +
                      built.stderr.decode(errors="replace").strip()[-200:])
                exe = None
        if exe:
            program_cases(c, exe, rng, args.scale, args.workdir)
            if args.scale > 1:
                fresh_program_cases(c, exe, rng, args.scale, args.workdir)
            c.run()
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
