#!/usr/bin/env bash
# Builds the front-end fuzzer with clang (ASan + UBSan + libFuzzer) in its own
# build directory and fuzzes for a fixed time, seeded with every .pipe file in
# the repository. Fails on any crash, sanitizer report, leak or timeout.
# usage: run_fuzz_smoke.sh SOURCE_DIR BUILD_DIR SECONDS
set -euo pipefail
src=$1 build=$2 seconds=${3:-60}

run_logged() { # quiet unless it fails
  local log=$1; shift
  "$@" > "$log" 2>&1 || { tail -n 40 "$log"; exit 1; }
}
run_logged "$build.configure.log" cmake -S "$src" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DPIPEC_FUZZ=ON -DPIPEC_ENABLE_CUDA=OFF -DPIPEC_BUILD_TESTS=ON
run_logged "$build.build.log" cmake --build "$build" --target pipec_frontend_fuzzer

corpus=$build/corpus
mkdir -p "$corpus"
find "$src/examples" "$src/tests" -name '*.pipe' -exec cp {} "$corpus/" \;
"$build/bin/pipec_frontend_fuzzer" "$corpus" -dict="$src/tests/fuzz/pipe.dict" -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 -artifact_prefix="$build/" 2>&1 | tail -n 15
echo "fuzz smoke: no crash, hang or sanitizer report in ${seconds}s"
