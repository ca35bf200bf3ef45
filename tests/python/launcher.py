"""Runs a worker script as P processes of one gloo job on localhost, each under
a hard deadline: a process still running at the deadline is killed (with its
process group), so a hung test fails instead of hanging CI.

    python launcher.py --nproc 4 --deadline 120 worker.py ARGS...

Exit status: 0 when every rank exited 0; otherwise 1, with each rank's output.
Used by the ctest tests in this folder (CMakeLists.txt).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from typing import List, Optional


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(nproc: int, deadline_s: float, command: List[str], env_extra: Optional[dict] = None,
           grace_after_rank0_s: Optional[float] = None):
    """Starts the ranks; returns [(returncode or None if killed, output)] per rank.
    With grace_after_rank0_s, the other ranks are killed that long after rank 0
    exits (fault tests, where a peer hangs on purpose)."""
    port = free_port()
    procs = []
    for rank in range(nproc):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                   WORLD_SIZE=str(nproc), LOCAL_RANK=str(rank), OMP_NUM_THREADS="1",
                   PYTHONUNBUFFERED="1", **(env_extra or {}))
        procs.append(subprocess.Popen([sys.executable] + command, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True,
                                      start_new_session=True))
    end = time.monotonic() + deadline_s
    results = [None] * nproc
    outputs = [""] * nproc
    for rank, proc in enumerate(procs):
        if rank == 1 and grace_after_rank0_s is not None and results[0] is not None:
            end = min(end, time.monotonic() + grace_after_rank0_s)
        try:
            out, _ = proc.communicate(timeout=max(0.1, end - time.monotonic()))
            results[rank], outputs[rank] = proc.returncode, out
        except subprocess.TimeoutExpired:
            pass
    for rank, proc in enumerate(procs):
        if results[rank] is None:  # past the deadline: kill it and its children
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, _ = proc.communicate()
            outputs[rank] = out + f"\n[launcher] rank {rank} killed (past its deadline)\n"
    return list(zip(results, outputs))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nproc", type=int, required=True)
    parser.add_argument("--deadline", type=float, required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    results = launch(args.nproc, args.deadline, args.command)
    ok = all(code == 0 for code, _ in results)
    for rank, (code, out) in enumerate(results):
        if not ok or os.environ.get("PIPEC_TEST_VERBOSE"):
            print(f"===== rank {rank} (exit {code}) =====\n{out}")
        else:  # the summary lines only
            for line in out.splitlines():
                if line.startswith("PASS") or line.startswith("MEASURED"):
                    print(f"[rank {rank}] {line}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
