"""Pipeline x data parallel (pipec.parallel) in one 4-process gloo job: P = 2
pipeline ranks x D = 2 replicas, against single-process PyTorch on the whole
batch (worker_parallel.py), under a deadline. Registered with ctest
(python-parallel-p2x2)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import launcher  # noqa: E402

SCHEDULES = "1f1b,interleaved_1f1b,zb_h1,zbv,dualpipev"


def main() -> int:
    worker = os.path.join(HERE, "worker_parallel.py")
    results = launcher.launch(4, 400, [worker, "2", "2", SCHEDULES])
    ok = all(code == 0 for code, _ in results)
    for rank, (code, out) in enumerate(results):
        if not ok or rank == 0:
            print(f"===== rank {rank} (exit {code}) =====\n{out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
