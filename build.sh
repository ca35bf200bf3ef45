#!/usr/bin/env bash
# Configures and builds pipec into ./build (CUDA targets too when nvcc exists).
set -euo pipefail
cd "$(dirname "$0")"
cmake -S . -B build -G Ninja "$@" > build.configure.log 2>&1 || { cat build.configure.log; exit 1; }
cmake --build build
