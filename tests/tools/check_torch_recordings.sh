#!/usr/bin/env bash
# Records PyTorch's orders again with the installed torch and compares them with
# the recorded inputs (the version line of the DualPipeV reference aside).
# Skipped (exit 77) where torch is not installed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
inputs="$here/../lit/library/Inputs"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
python3 "$here/regenerate_torch_csvs.py" "$out" || exit $?
for f in "$out"/*.csv; do
  cmp "$f" "$inputs/$(basename "$f")"
done
diff <(tail -n +2 "$out/reference/torch_dualpipev_P4_M10.txt") \
     <(tail -n +2 "$inputs/reference/torch_dualpipev_P4_M10.txt")
echo "check_torch_recordings: the installed torch gives the recorded orders"
