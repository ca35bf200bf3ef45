"""The error and fault tests of the PyTorch runtime (worker_errors.py), each a
2-process gloo job under a hard deadline.  Every case must end with the
expected error on the ranks that report it, well within the deadline: a hang
fails the test instead of hanging it.

    run_errors.py
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import launcher  # noqa: E402

DEADLINE_S = 90
# case -> (ranks that must print EXPECTED and PASS, expected exit of the others)
CASES = {
    "setup": ({0, 1}, None),
    "mismatch": ({0, 1}, None),
    "dies": ({0}, 3),       # rank 1 exits with 3 on purpose
    "hangs": ({0}, None),   # rank 1 sleeps and is killed after rank 0 reported
    "reshape": ({0, 1}, None),
}


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    failed = []
    for case, (reporting, other_exit) in CASES.items():
        started = time.monotonic()
        results = launcher.launch(2, DEADLINE_S, [os.path.join(here, "worker_errors.py"), case],
                                  grace_after_rank0_s=2 if case == "hangs" else None)
        took = time.monotonic() - started
        ok = True
        for rank, (code, out) in enumerate(results):
            if rank in reporting:
                ok &= code == 0 and "PASS" in out and "EXPECTED" in out
            elif other_exit is not None:
                ok &= code == other_exit
        ok &= took < DEADLINE_S - 5
        print(f"{case}: {'ok' if ok else 'FAILED'} in {took:.1f} s")
        for rank, (code, out) in enumerate(results):
            lines = [l for l in out.splitlines() if l.startswith(("EXPECTED", "FAIL"))]
            for line in lines:
                print(f"  [rank {rank}] {line}")
            if not ok:
                print(f"===== rank {rank} (exit {code}) =====\n{out}")
        if not ok:
            failed.append(case)
    print("errors: " + ("all cases ok" if not failed else f"FAILED: {', '.join(failed)}"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
