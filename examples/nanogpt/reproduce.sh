#!/usr/bin/env bash
# Reproduces the example's numbers and loss.svg: exports the GPT (fp64 and
# fp32), builds DualPipeV and DualPipe programs (P=4), trains each STEPS steps,
# trains single-process PyTorch on the same data, compares and plots.
#   examples/nanogpt/reproduce.sh [OUT_DIR] [STEPS]     (from the repository root)
# PYTHON names the Python with torch (default python3); PIPEC the pipec binary;
# MOE=1 trains the MoE variant (4 experts, top-2, in every block).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
out="${1:-build/nanogpt}"
steps="${2:-300}"
python="${PYTHON:-python3}"
pipec="${PIPEC:-$root/build/bin/pipec}"
model=(--n-layer 8 --n-embd 32 --n-head 4 --seq 32 ${MOE:+--moe})
train=(--loss cross-entropy --data "$out/train.bin" --seq 32 --micro-batch-size 2 --steps "$steps"
       --optimizer adamw --lr 0.003 --clip-grad-norm 1)
mkdir -p "$out"
"$python" "$here/tokenizer.py" --out "$out/train.bin"
for dtype in fp64 fp32; do
  "$python" "$here/export.py" --stages 8 --dtype $dtype --out "$out/v-$dtype" "${model[@]}"
  "$python" "$here/export.py" --stages 4 --dtype $dtype --out "$out/d-$dtype" "${model[@]}"
done
"$pipec" build "$root/examples/dualpipev.pipe" --target cpu -D P=4 -D M=8 --stages torchscript -o "$out/dualpipev"
"$pipec" build "$root/examples/dualpipe.pipe" --target cpu -D P=4 -D M=8 --stages torchscript -o "$out/dualpipe"
for dtype in fp64 fp32; do
  "$out/dualpipev" --model torchscript --model-path "$out/v-$dtype" --dtype $dtype "${train[@]}" > "$out/dualpipev-$dtype.log"
  "$out/dualpipe" --model torchscript --model-path "$out/d-$dtype" --dtype $dtype "${train[@]}" > "$out/dualpipe-$dtype.log"
  "$python" "$here/train_reference.py" --config "$out/v-$dtype/config.json" --data "$out/train.bin" \
    --micro-batches 8 --micro-batch-size 2 --dtype $dtype --steps "$steps" --lr 0.003 --clip-grad-norm 1 \
    > "$out/reference-$dtype.log"
done
# The first steps again with --check: the runtime's own reference, every gradient and parameter.
"$out/dualpipev" --model torchscript --model-path "$out/v-fp64" --dtype fp64 "${train[@]}" --steps 3 --check | tail -4
"$out/dualpipe" --model torchscript --model-path "$out/d-fp64" --dtype fp64 "${train[@]}" --steps 3 --check | tail -4
for run in dualpipev dualpipe; do
  python3 "$here/compare.py" "$out/$run-fp64.log" "$out/reference-fp64.log" --tolerance 1e-10 || true
  python3 "$here/compare.py" "$out/$run-fp32.log" "$out/reference-fp32.log" --tolerance 1e-4 || true
done
python3 "$here/compare.py" "$out/dualpipev-fp32.log" "$out/reference-fp64.log" --tolerance 1e-2 || true
python3 "$here/plot.py" -o "$out/loss.svg" --title "nanoGPT${MOE:+ MoE} (8 blocks, byte-level): loss per step" \
  "$out/dualpipev-fp64.log:DualPipeV P=4, fp64" "$out/dualpipe-fp64.log:DualPipe P=4, fp64" \
  "$out/dualpipev-fp32.log:DualPipeV P=4, fp32" "$out/reference-fp64.log:PyTorch, one process, fp64"
