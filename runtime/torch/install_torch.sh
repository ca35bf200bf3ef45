#!/usr/bin/env bash
# Installs LibTorch for the torch stages (`./setup.sh --torch`): torch from PyPI
# into one virtual environment per user, $PIPEC_TORCH_VENV, else
# ~/.cache/pipec/torch-venv. One per user rather than one per clone: the wheel
# and its CUDA libraries are about 4 GB installed, and CI builds a fresh clone
# each time on the same machine, so every clone and worktree shares it. The
# build finds it at the same place (CMakeLists.txt, "LibTorch").
#
# torch is installed without its dependencies, then with each of them except
# triton (1 GB, for torch.compile's GPU kernels) and cuda-bindings: TorchScript
# needs neither. The CUDA libraries cannot be left out: libtorch_cuda.so,
# which `import torch` loads, links cuDNN, cuBLAS, NCCL and the rest.
# Safe to run again: it does nothing when the right torch is there.
set -euo pipefail

venv="${PIPEC_TORCH_VENV:-$HOME/.cache/pipec/torch-venv}"
spec="${PIPEC_TORCH_SPEC:-torch==2.15.*}" # TorchScript export and loading are tested with 2.15
python="$venv/bin/python"

if [ -x "$python" ] && "$python" - "$spec" <<'EOF' 2>/dev/null; then
import sys
from importlib.metadata import version
from packaging.requirements import Requirement
import torch  # the libraries load, not only the metadata
sys.exit(0 if Requirement(sys.argv[1]).specifier.contains(version("torch"), prereleases=True) else 1)
EOF
  echo "setup: torch $("$python" -c 'import torch; print(torch.__version__)') present in $venv"
  exit 0
fi

start=$(date +%s)
echo "setup: installing $spec into $venv (about 3 GB to download)"
mkdir -p "$(dirname "$venv")"
python3 -m venv --clear "$venv"
pip=("$python" -m pip install --quiet --no-cache-dir --disable-pip-version-check)
"${pip[@]}" --upgrade pip packaging
"${pip[@]}" --no-deps "$spec"
# torch's own requirements for this platform, less what TorchScript never loads.
mapfile -t deps < <("$python" - <<'EOF'
from importlib.metadata import requires
from packaging.requirements import Requirement
skip = {"triton", "cuda-bindings"}
for text in requires("torch") or []:
    req = Requirement(text)
    if req.name in skip or (req.marker and not req.marker.evaluate({"extra": ""})):
        continue
    print(str(req).split(";")[0].strip())
EOF
)
"${pip[@]}" "${deps[@]}"
"$python" -c 'import torch; torch.jit.script(torch.nn.Linear(2, 2))'
echo "setup: torch $("$python" -c 'import torch; print(torch.__version__)') installed in $venv" \
     "($(du -sh "$venv" | cut -f1), $(( $(date +%s) - start )) s)"
