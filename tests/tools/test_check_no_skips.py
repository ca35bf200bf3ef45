""".ci/check_no_skips.py on ctest logs: a skipped torch test fails CI, a
skipped gpu-checks passes only on a runner without a GPU, a clean log passes."""
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".ci", "check_no_skips.py")
PASSED = "100% tests passed, 0 tests failed out of 40\n"
CASES = [  # (log, GPU present, expected exit status)
    (PASSED, "0", 0),
    ("The following tests did not run:\n\t 23 - torch-recordings (Skipped)\n" + PASSED, "0", 1),
    ("The following tests did not run:\n\t 45 - python-torch-native (Skipped)\n" + PASSED, "0", 1),
    ("The following tests did not run:\n\t 31 - gpu-checks (Skipped)\n" + PASSED, "0", 0),
    ("The following tests did not run:\n\t 31 - gpu-checks (Skipped)\n" + PASSED, "1", 1),
]


def main() -> int:
    failures = 0
    for log, gpu, want in CASES:
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write(log)
        got = subprocess.run([sys.executable, SCRIPT, f.name], capture_output=True,
                             env=dict(os.environ, PIPEC_CI_GPU=gpu)).returncode
        os.unlink(f.name)
        if got != want:
            print(f"FAIL: GPU={gpu}, log {log!r}: exit {got}, expected {want}")
            failures += 1
    print(f"{len(CASES) - failures} of {len(CASES)} cases as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
