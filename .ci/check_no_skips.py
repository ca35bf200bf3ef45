#!/usr/bin/env python3
"""Fails CI when ctest skipped a test that CI's own set-up enables.

    .ci/check_no_skips.py CTEST_LOG

CI runs `./setup.sh --torch`, so every torch test must run; a skip there means
a test found its environment missing and nobody noticed (torch-recordings ran
the system python3 and was skipped in every CI run). The one allowed skip is
gpu-checks on a runner without an NVIDIA GPU, which CI's set-up cannot give.
ctest lists skipped tests after "The following tests did not run:" as
"  <n> - <name> (Skipped)".
"""
import os
import re
import shutil
import subprocess
import sys


def gpu_present() -> bool:
    if os.environ.get("PIPEC_CI_GPU") in ("0", "1"):  # tests set it
        return os.environ["PIPEC_CI_GPU"] == "1"
    smi = shutil.which("nvidia-smi")
    return bool(smi) and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def main(log_path: str) -> int:
    text = open(log_path, errors="replace").read()
    skipped = re.findall(r"^\s*\d+\s+-\s+(\S+)\s+\(Skipped\)", text, re.M)
    allowed = set() if gpu_present() else {"gpu-checks"}
    unexpected = [name for name in skipped if name not in allowed]
    for name in unexpected:
        print(f"check_no_skips: ctest skipped '{name}', which CI's set-up should run")
    if "tests passed" not in text and "No tests were found" in text:
        print("check_no_skips: ctest found no tests")
        return 1
    print(f"check_no_skips: {len(skipped)} skipped, {len(unexpected)} of them unexpected")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
