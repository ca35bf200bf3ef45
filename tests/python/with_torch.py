"""Runs a test script with the torch environment's Python, or skips it.

    with_torch.py TORCH_PYTHON SCRIPT ARGS...

TORCH_PYTHON is the Python of the environment holding torch
($PIPEC_TORCH_VENV/bin/python, else ~/.cache/pipec/torch-venv/bin/python:
what ./setup.sh --torch installs; CMake passes it). When it is missing or
cannot import torch, prints why and exits 77, which ctest reports as skipped.
"""

import os
import subprocess
import sys


def main() -> int:
    python, script, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if not os.path.isfile(python):
        print(f"skipped: no torch environment at {python} (run ./setup.sh --torch, or set "
              "PIPEC_TORCH_VENV and reconfigure)")
        return 77
    probe = subprocess.run([python, "-c", "import torch, torch.distributed as d; "
                            "assert d.is_available() and d.is_gloo_available()"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"skipped: {python} cannot import torch with gloo: "
              f"{(probe.stderr.strip().splitlines() or ['?'])[-1]}")
        return 77
    os.execv(python, [python, script] + args)


if __name__ == "__main__":
    sys.exit(main())
