#!/usr/bin/env bash
# Builds the fuzz targets with clang (ASan + UBSan + libFuzzer) in their own
# build directory and fuzzes each for its share of a fixed time: the front end
# and the simulator seeded with every .pipe file in the repository, import
# with every .csv; then the two readers of untrusted files a few seconds each,
# the torch-csv reader (every .csv) and the --costs reader (every .json, the
# seeds in corpus/costs among them). Fails on any crash, sanitizer report, leak
# or timeout.
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
run_logged "$build.build.log" cmake --build "$build" \
  --target pipec_frontend_fuzzer pipec_sim_fuzzer pipec_import_fuzzer pipec_csv_fuzzer \
  pipec_costs_fuzzer

# The front end gets the largest share: it sees every input the others see.
share() { echo $(( seconds * $1 / 4 > 1 ? seconds * $1 / 4 : 1 )); }

fuzz() { # TARGET SECONDS CORPUS EXTENSION [libFuzzer options]
  local target=$1 time=$2 corpus=$build/corpus-$1 extension=$3; shift 3
  mkdir -p "$corpus"
  find "$src/examples" "$src/tests" -name "*.$extension" -exec cp {} "$corpus/" \;
  echo "== $target: ${time}s"
  "$build/bin/pipec_${target}_fuzzer" "$corpus" -max_total_time="$time" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/$target-" "$@" 2>&1 |
    tail -n 15
}
fuzz frontend "$(share 2)" pipe -dict="$src/tests/fuzz/pipe.dict" -max_len=4096
fuzz sim "$(share 1)" pipe -dict="$src/tests/fuzz/pipe.dict" -max_len=4096
fuzz import "$(share 1)" csv -dict="$src/tests/fuzz/csv.dict" -max_len=8192
fuzz csv 5 csv -dict="$src/tests/fuzz/csv.dict" -max_len=8192
fuzz costs 5 json -dict="$src/tests/fuzz/costs.dict" -max_len=4096
echo "fuzz smoke: no crash, hang or sanitizer report in ${seconds}s"
