#!/usr/bin/env bash
# Every GPU check of the CUDA backend in one run, ending with a short table:
#   - correctness of every library schedule on the in-process transport (all
#     ranks on this GPU): MLP fp32, MoE fp32 and MLP bf16 against the fp64 CPU
#     reference, and CUDA-graph replay identical to the eager step;
#   - NCCL single-rank smoke (one process, the bootstrap over MASTER_ADDR/PORT);
#   - step time of DualPipe on a larger MLP;
#   - host overhead per op, eager against CUDA graphs (--model empty);
#   - the overlap gain of F&B pairs with the MoE all-to-all on, against the
#     same pairs run serially (--serial-pairs);
#   - Offload/Reload (1f1b_offload, in the correctness list: peaks against the
#     prediction are part of --check) with gradients bit-identical to plain
#     1F1B's (the --check digest), and per-micro-batch sizes (schedules with
#     `sizes` written in before their placement).
#   - BPipe's transfers (bpipe, in the correctness list; one process) with
#     gradients bit-identical to the same order with the transfers stripped.
#
# Usage: tests/gpu/run_all.sh [--emit DIR] [--programs DIR]
#   --emit DIR      only write the CUDA programs into DIR (needs pipec; no GPU)
#   --programs DIR  use programs written earlier by --emit (for a GPU machine
#                   without LLVM/ANTLR: only nvcc, CUDA, NCCL and cmake needed)
# Without a GPU it prints why and exits 77 (ctest's skip status).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PIPEC=${PIPEC:-$ROOT/build/bin/pipec}
WORK=${WORK:-$(mktemp -d /tmp/pipec-gpu.XXXXXX)}
mkdir -p "$WORK" || exit 2
EMIT_ONLY="" PROGRAMS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --emit) EMIT_ONLY=$2; shift 2 ;;
    --programs) PROGRAMS=$2; shift 2 ;;
    *) echo "usage: $0 [--emit DIR] [--programs DIR]" >&2; exit 2 ;;
  esac
done

# Schedule, P, M of every program this script runs.
CORRECTNESS="gpipe:4:6 1f1b:4:6 interleaved_1f1b:4:8 zb_h1:4:6 zbv:4:9 chimera:4:8 dualpipe:4:10 dualpipev:4:9 1f1b_offload:4:8 bpipe:4:8"
EXTRA="1f1b:1:4 dualpipe:4:20 1f1b:4:256 1f1b:4:8"
# Written with sizes 2 3 1 2 3 1 ... (emitted as sized_<name>_P<p>_M<m>).
SIZED="zb_h1:4:7 1f1b_offload:4:9 dualpipev:4:9"
SIZES_LINE='  sizes i -> i % 3 == 2 ? 1 : (i % 3 == 1 ? 3 : 2);'

emit_programs() { # DIR
  mkdir -p "$1" || exit 2
  for spec in $CORRECTNESS $EXTRA; do
    IFS=: read -r name p m <<< "$spec"
    "$PIPEC" emit --target cuda "$ROOT/examples/$name.pipe" -D P="$p" -D M="$m" \
      -o "$1/${name}_P${p}_M${m}.cu" || { echo "emit of $spec failed" >&2; exit 2; }
  done
  for spec in $SIZED; do
    IFS=: read -r name p m <<< "$spec"
    awk -v line="$SIZES_LINE" 'BEGIN{d=0} /^  place/ && !d {print line; d=1} {print}' \
      "$ROOT/examples/$name.pipe" > "$1/sized_$name.pipe"
    "$PIPEC" emit --target cuda "$1/sized_$name.pipe" -D P="$p" -D M="$m" \
      -o "$1/sized_${name}_P${p}_M${m}.cu" || { echo "emit of sized $spec failed" >&2; exit 2; }
  done
  # bpipe without its transfers: the order its gradients must equal bit for bit.
  sed -e 's/\(Evict\|Hold\|Return\|Load\)(0, mb = [^)]*);//g' "$ROOT/examples/bpipe.pipe" \
    > "$1/bpipe_stripped.pipe"
  "$PIPEC" emit --target cuda "$1/bpipe_stripped.pipe" -D P=4 -D M=8 \
    -o "$1/bpipe_stripped_P4_M8.cu" 2>/dev/null || { echo "emit of stripped bpipe failed" >&2; exit 2; }
}

if [ -n "$EMIT_ONLY" ]; then
  emit_programs "$EMIT_ONLY"
  echo "wrote $(ls "$EMIT_ONLY"/*.cu | wc -l) programs to $EMIT_ONLY"
  exit 0
fi

if ! { nvidia-smi -L > /dev/null 2>&1 || [ -e /dev/nvidia0 ]; }; then
  echo "no GPU on this machine: skipping the GPU checks"
  exit 77
fi
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$NVCC" ] || { echo "no nvcc (set NVCC)" >&2; exit 2; }

# --- programs and runtime ------------------------------------------------------
if [ -z "$PROGRAMS" ]; then
  PROGRAMS=$WORK/programs
  [ -x "$PIPEC" ] || { echo "no pipec at $PIPEC: build it, or pass --programs" >&2; exit 2; }
  emit_programs "$PROGRAMS"
fi
# NCCL may come only as a Python wheel on GPU machines: find its directory.
if [ -z "${NCCL_HOME:-}" ] && [ ! -e /usr/local/cuda/include/nccl.h ]; then
  NCCL_HOME=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null \
    || ls -d /opt/*/.venv/lib/python3*/site-packages/nvidia/nccl 2>/dev/null | head -1)
  export NCCL_HOME
fi
echo "building the runtime (pipert, pipert_cuda) in $WORK/runtime ..."
cmake -S "$ROOT" -B "$WORK/runtime" -DPIPEC_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$NVCC" > "$WORK/cmake.log" 2>&1 \
  && cmake --build "$WORK/runtime" -j"$(nproc)" > "$WORK/build.log" 2>&1 \
  || { tail -n 30 "$WORK/cmake.log" "$WORK/build.log"; echo "runtime build failed" >&2; exit 2; }
RT_INCLUDE=$ROOT/runtime/include
RT_LIBS="$WORK/runtime/runtime/cuda/libpipert_cuda.a $WORK/runtime/runtime/libpipert.a"
NCCL_LIB=$(grep -m1 '^PIPEC_NCCL_LIBRARY:' "$WORK/runtime/CMakeCache.txt" | cut -d= -f2)

build_program() { # NAME -> $WORK/bin/NAME (the same command `pipec build --target cuda` runs)
  mkdir -p "$WORK/bin"
  "$NVCC" -std=c++17 -O2 -arch=sm_90 -I"$RT_INCLUDE" "$PROGRAMS/$1.cu" $RT_LIBS -lcublas -lcudart \
    "$NCCL_LIB" -Xlinker -rpath="$(dirname "$NCCL_LIB")" -Xcompiler -pthread -o "$WORK/bin/$1" \
    > "$WORK/$1.build.log" 2>&1 || { cat "$WORK/$1.build.log"; return 1; }
}

# --- checks --------------------------------------------------------------------
ROWS=() FAILED=0
row() { ROWS+=("$(printf '%-44s %-6s %s' "$1" "$2" "$3")"); [ "$2" = FAIL ] && FAILED=1; }
# run LABEL LOG -- COMMAND...: PASS when it exits 0
run() {
  local label=$1 log=$2; shift 3
  timeout 300 "$@" > "$log" 2>&1
  local status=$?
  [ $status -eq 0 ] && return 0
  echo "--- $label failed (exit $status):"; tail -n 15 "$log"; return 1
}
grab() { sed -n "s/$2/\\1/p" "$1" | tail -1; } # LOG SED-PATTERN-WITH-ONE-GROUP

for spec in $CORRECTNESS; do
  IFS=: read -r name p m <<< "$spec"
  prog=${name}_P${p}_M${m}
  build_program "$prog" || { row "$name P=$p M=$m" FAIL "build failed"; continue; }
  for variant in "mlp fp32" "moe fp32" "mlp bf16"; do
    read -r model dtype <<< "$variant"
    log=$WORK/$prog.$model.$dtype.log
    if run "$prog $variant" "$log" -- "$WORK/bin/$prog" --check --cuda-graphs --steps 2 \
        --model "$model" --dtype "$dtype" --hidden 64 --seq 64; then
      row "$name P=$p M=$m $model $dtype (graph = eager)" PASS \
        "max rel err $(grab "$log" '.*max relative gradient error per stage:\(.*\)' | tr -s ' ' | cut -c1-60)"
    else
      row "$name P=$p M=$m $model $dtype" FAIL "see $log"
    fi
  done
done

for spec in $SIZED; do
  IFS=: read -r name p m <<< "$spec"
  prog=sized_${name}_P${p}_M${m}
  build_program "$prog" || { row "sized $name P=$p M=$m" FAIL "build failed"; continue; }
  for variant in "mlp fp32" "moe fp32" "mlp bf16"; do
    read -r model dtype <<< "$variant"
    log=$WORK/$prog.$model.$dtype.log
    if run "$prog $variant" "$log" -- "$WORK/bin/$prog" --check --cuda-graphs --steps 2 \
        --model "$model" --dtype "$dtype" --hidden 64 --seq 32; then
      row "sized $name P=$p M=$m $model $dtype" PASS \
        "$(grab "$log" '^peak activations per rank (measured \/ predicted): \(.*\)$')"
    else
      row "sized $name P=$p M=$m $model $dtype" FAIL "see $log"
    fi
  done
done

# Offload/Reload leave the gradients bit for bit as the same order without them.
build_program 1f1b_P4_M8 && for model in mlp moe; do
  for prog in 1f1b_offload_P4_M8 1f1b_P4_M8; do
    run "$prog digest" "$WORK/$prog.digest.$model.log" -- "$WORK/bin/$prog" --check --cuda-graphs \
      --steps 2 --model $model --hidden 64 --seq 64
  done
  a=$(grab "$WORK/1f1b_offload_P4_M8.digest.$model.log" '.*gradient digest \([0-9a-f]*\).*')
  b=$(grab "$WORK/1f1b_P4_M8.digest.$model.log" '.*gradient digest \([0-9a-f]*\).*')
  if [ -n "$a" ] && [ "$a" = "$b" ]; then
    row "offload gradients = 1F1B's ($model)" PASS "digest $a"
  else
    row "offload gradients = 1F1B's ($model)" FAIL "digests '$a' / '$b'"
  fi
done

# BPipe's transfers leave the gradients bit for bit as the order without them.
build_program bpipe_stripped_P4_M8 && for model in mlp moe; do
  for prog in bpipe_P4_M8 bpipe_stripped_P4_M8; do
    run "$prog digest" "$WORK/$prog.digest.$model.log" -- "$WORK/bin/$prog" --check --cuda-graphs \
      --steps 2 --model $model --hidden 64 --seq 64
  done
  a=$(grab "$WORK/bpipe_P4_M8.digest.$model.log" '.*gradient digest \([0-9a-f]*\).*')
  b=$(grab "$WORK/bpipe_stripped_P4_M8.digest.$model.log" '.*gradient digest \([0-9a-f]*\).*')
  if [ -n "$a" ] && [ "$a" = "$b" ]; then
    row "bpipe gradients = stripped order's ($model)" PASS "digest $a"
  else
    row "bpipe gradients = stripped order's ($model)" FAIL "digests '$a' / '$b'"
  fi
done

# NCCL, one process, rank 0 of 1: bootstrap, communicators, the loss all-reduce.
build_program 1f1b_P1_M4 && log=$WORK/nccl.log &&
  if run nccl "$log" -- env RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$((20000 + RANDOM % 20000)) "$WORK/bin/1f1b_P1_M4" --transport nccl --check; then
    row "NCCL single-rank smoke (1f1b P=1)" PASS "$(grab "$log" '.*check: tolerance \(.*\)')"
  else
    row "NCCL single-rank smoke (1f1b P=1)" FAIL "see $log"
  fi

build_program dualpipe_P4_M20 || row "dualpipe P=4 M=20" FAIL "build failed"
for dtype in fp32 bf16; do
  log=$WORK/steptime.$dtype.log
  if run steptime "$log" -- "$WORK/bin/dualpipe_P4_M20" --steps 3 --hidden 2048 --seq 2048 --dtype $dtype; then
    row "step time dualpipe P=4 M=20 h=2048 $dtype" PASS "$(grab "$log" '^eager: \([0-9.]* ms\) per step.*')"
  else
    row "step time dualpipe P=4 M=20 $dtype" FAIL "see $log"
  fi
done

build_program 1f1b_P4_M256 || row "1f1b P=4 M=256" FAIL "build failed"
log=$WORK/overhead.log
if run overhead "$log" -- "$WORK/bin/1f1b_P4_M256" --model empty --cuda-graphs --steps 5; then
  row "host overhead per op (1f1b P=4 M=256, empty)" PASS \
    "eager $(grab "$log" '^eager: .*, \([0-9.]* us\) per op'), graph $(grab "$log" '^graph: .*, \([0-9.]* us\) per op')"
else
  row "host overhead per op" FAIL "see $log"
fi

# Overlap: the same MoE program with pairs interleaved on two streams and serial.
for mode in overlap serial; do
  flags=""; [ $mode = serial ] && flags=--serial-pairs
  if ! run $mode "$WORK/$mode.log" -- "$WORK/bin/dualpipe_P4_M20" --model moe --steps 3 \
      --hidden 2048 --seq 4096 --cuda-graphs $flags; then
    row "overlap gain (dualpipe MoE, $mode)" FAIL "see $WORK/$mode.log"
  fi
done
overlap=$(grab "$WORK/overlap.log" '^graph: \([0-9.]*\) ms per step.*')
serial=$(grab "$WORK/serial.log" '^graph: \([0-9.]*\) ms per step.*')
if [ -n "$overlap" ] && [ -n "$serial" ]; then
  row "overlap gain of F&B pairs (dualpipe MoE h=2048)" INFO \
    "serial $serial ms / overlapped $overlap ms = $(python3 -c "print(f'{$serial/$overlap:.3f}x')")"
fi

echo
printf '%-44s %-6s %s\n' "check" "result" "detail"
printf '%s\n' "${ROWS[@]}"
echo "logs in $WORK"
exit $FAILED
