#!/usr/bin/env bash
# Configures and builds pipec into ./build (CUDA targets too when nvcc exists, the
# torch stages when LibTorch is installed: ./setup.sh --torch).
set -euo pipefail
cd "$(dirname "$0")"
cmake -S . -B build -G Ninja "$@" > build.configure.log 2>&1 || { cat build.configure.log; exit 1; }
grep -h "pipec: LibTorch" build.configure.log || true # found, or why its stages are skipped
cmake --build build
