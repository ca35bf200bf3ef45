#!/usr/bin/env bash
# Installs what pipec needs to build and test on Debian 12 (bookworm), as root or
# through sudo. Safe to run again: it does nothing when everything is present.
set -euo pipefail
# --torch also installs LibTorch for the torch stages (runtime/torch/install_torch.sh:
# torch from PyPI, about 3 GB, into ~/.cache/pipec/torch-venv or $PIPEC_TORCH_VENV).
torch=0
for arg in "$@"; do
  case "$arg" in
    --torch) torch=1 ;;
    *) echo "usage: ./setup.sh [--torch]" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build python3 ccache
  antlr4 libantlr4-runtime-dev uuid-dev   # ANTLR 4.7.2 tool + 4.9 C++ runtime
  llvm-14-dev llvm-14-tools               # LLVM Support, FileCheck, lit
  libfmt-dev catch2
  clang-14 libclang-rt-14-dev             # libFuzzer + sanitizers for the fuzz smoke test
)

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" > /dev/null 2>&1 || missing+=("$p")
done
if [ $torch -eq 1 ]; then
  dpkg -s python3-venv > /dev/null 2>&1 || missing+=(python3-venv)
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
else
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
  echo "setup: done"
fi
if [ $torch -eq 1 ]; then
  "$(dirname "$0")/runtime/torch/install_torch.sh"
fi
