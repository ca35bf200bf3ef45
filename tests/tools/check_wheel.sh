#!/usr/bin/env bash
# The CI wheel (scripts/build_wheel.py) end to end: built from the pipec just
# built, installed into a fresh venv with no index, its `pipec` runs check and
# fmt --check on the library, and a failing schedule still fails through it.
#   check_wheel.sh PIPEC
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
python3 "$root/scripts/build_wheel.py" --pipec "$1" --out "$out/dist"
python3 -m venv "$out/venv"
"$out/venv/bin/pip" install --quiet --no-index "$out"/dist/pipec-*.whl
"$out/venv/bin/pipec" check --werror --format github "$root"/examples/*.pipe
"$out/venv/bin/pipec" fmt --check "$root"/examples/*.pipe
printf 'schedule bad(P = 2) { ranks P; }\n' > "$out/bad.pipe"
if "$out/venv/bin/pipec" check "$out/bad.pipe" > /dev/null 2>&1; then
  echo "check_wheel: a bad schedule passed through the wheel's pipec"; exit 1
fi
echo "check_wheel: the wheel's pipec checks and formats the library"
