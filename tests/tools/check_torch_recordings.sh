#!/usr/bin/env bash
# Records PyTorch's orders again with the installed torch and compares them with
# the recorded inputs (the version line of the DualPipeV reference aside).
# Runs $PIPEC_TORCH_PYTHON (ctest sets it to the torch environment's Python,
# runtime/torch/LibTorch.cmake), else python3; exits 77 (skipped) where that
# Python has no torch, which ctest counts as a skip only where configure found
# no torch.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
inputs="$here/../lit/library/Inputs"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"${PIPEC_TORCH_PYTHON:-python3}" "$here/regenerate_torch_csvs.py" "$out" || exit $?
for f in "$out"/*.csv; do
  cmp "$f" "$inputs/$(basename "$f")"
done
diff <(tail -n +2 "$out/reference/torch_dualpipev_P4_M10.txt") \
     <(tail -n +2 "$inputs/reference/torch_dualpipev_P4_M10.txt")
echo "check_torch_recordings: the installed torch gives the recorded orders"
