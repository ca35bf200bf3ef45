"""Runs pipec on hostile inputs and tells a rejection from a failure.

A run passes when pipec exits 0, 1 or 2 in time, within the memory cap, and
without a sanitizer report. Anything else -- a signal, another exit status, a
timeout, running out of memory -- is a failure, reported with the command and
the input that reproduces it.

Inputs are checked in batches (`pipec check a.pipe b.pipe ...`: one process
for hundreds of files keeps the suite fast); a failing batch is split in
halves until the failing files are found, so each report names one input.
"""
import json
import os
import resource
import shutil
import subprocess
import sys

MEMORY_CAP_BYTES = 2_000_000 * 1024  # as `ulimit -v 2000000`
# Per run: the cases take a second or less, so this only tells a hang from a
# slow machine (CI shares its cores); speed is measured in tests/bench, not here.
TIMEOUT_S = 60
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "ERROR: UndefinedBehaviorSanitizer")
OOM_MARKS = ("out of memory", "std::bad_alloc", "Cannot allocate memory")


def _limit_memory():
    # Sanitizer builds reserve terabytes of address space; they bound memory
    # themselves, so only plain builds get the cap.
    if not os.environ.get("PIPEC_ADVERSARIAL_NO_MEMORY_CAP"):
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(argv, stdin_bytes=None, timeout=TIMEOUT_S, cwd=None, allowed=(0, 1, 2), output=None):
    """Runs argv; returns None when it passes, else why it failed. `output`,
    a list, receives standard output."""
    try:
        proc = subprocess.run(argv, input=stdin_bytes,
                              stdin=None if stdin_bytes is not None else subprocess.DEVNULL,
                              stdout=subprocess.PIPE if output is not None else subprocess.DEVNULL,
                              stderr=subprocess.PIPE,
                              timeout=timeout, preexec_fn=_limit_memory, cwd=cwd)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout} s"
    if output is not None:
        output.append(proc.stdout)
    err = proc.stderr.decode("utf-8", "replace")
    tail = err[-600:]
    if any(mark in err for mark in SANITIZER_MARKS):
        return "sanitizer report:\n" + tail
    if proc.returncode < 0 or proc.returncode not in allowed:
        what = (f"killed by signal {-proc.returncode}" if proc.returncode < 0
                else f"exit status {proc.returncode}")
        if any(mark in err for mark in OOM_MARKS):
            what += " (memory exhausted under the cap)"
        return what + ":\n" + tail
    return None


class Suite:
    """Collects failures of one group and prints them with their inputs."""

    def __init__(self, name, pipec, workdir):
        self.name, self.pipec, self.workdir = name, pipec, workdir
        self.failures = []
        self.runs = 0
        shutil.rmtree(workdir, ignore_errors=True)
        os.makedirs(workdir)

    def case(self, label, argv, stdin_bytes=None, input_text=None, timeout=TIMEOUT_S, cwd=None,
             allowed=(0, 1, 2)):
        self.runs += 1
        why = run(argv, stdin_bytes, timeout, cwd, allowed)
        if why:
            self.failures.append((label, argv, why, input_text))
        return why is None

    def batch(self, label, args, paths, extra=(), timeout=TIMEOUT_S):
        """`pipec ARGS path... EXTRA` over paths, bisecting to the failing ones."""
        if not paths:
            return
        self.runs += 1
        argv = [self.pipec, *args, *paths, *extra]
        why = run(argv, timeout=timeout)
        if not why:
            return
        if len(paths) == 1:
            with open(paths[0], "rb") as f:
                text = f.read()
            self.failures.append((f"{label} {os.path.basename(paths[0])}", argv, why, text))
            return
        half = len(paths) // 2
        self.batch(label, args, paths[:half], extra, timeout)
        self.batch(label, args, paths[half:], extra, timeout)

    def check_then_sim(self, paths, extra=()):
        """`check` on every path, then `sim` on those that check clean (on the
        others sim would only repeat check's work)."""
        if not paths:
            return
        self.runs += 1
        out = []
        argv = [self.pipec, "check", "--format", "json", *extra, *paths]
        if run(argv, output=out):
            self.batch("check", ["check", *extra], paths)
            self.batch("sim", ["sim", *extra], paths)
            return
        try:
            files = json.loads(out[0])["files"]
            clean = [f["path"] for f in files
                     if not any(d["severity"] == "error" for d in f["diagnostics"])]
        except (ValueError, KeyError, TypeError):
            clean = paths
        self.batch("sim", ["sim", *extra], clean)

    def finish(self):
        print(f"{self.name}: {self.runs} pipec runs, {len(self.failures)} failures")
        for label, argv, why, text in self.failures[:20]:
            print(f"\nFAIL {label}\n  command: {' '.join(map(repr, argv))}\n  {why}")
            if text is not None:
                shown = text if len(text) <= 2000 else text[:1000] + b"\n...\n" + text[-1000:]
                print(f"  input ({len(text)} bytes): {shown!r}")
        if len(self.failures) > 20:
            print(f"\n... and {len(self.failures) - 20} more failures")
        if self.failures:
            print(f"\nreproducing inputs are kept under {self.workdir}")
        return 1 if self.failures else 0


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return path


def examples(source_dir):
    folder = os.path.join(source_dir, "examples")
    return [os.path.join(folder, name) for name in sorted(os.listdir(folder))
            if name.endswith(".pipe")]


def main_args():
    if len(sys.argv) != 4:
        sys.exit(f"usage: {sys.argv[0]} PIPEC SOURCE_DIR WORK_DIR")
    return sys.argv[1], sys.argv[2], sys.argv[3]
