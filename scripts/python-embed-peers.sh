#!/usr/bin/env bash
# Set up the Python environment for the embedding peers and reference tools
# (bench/peers/embed_peer.py, crates/adapters-candle/tests/fixtures/gen_parity.py).
#
# Creates a virtual environment at ${ZHIKU_CACHE_DIR:-$HOME/.cache/zhiku}/venv-embed
# holding numpy, safetensors, tokenizers, sentence-transformers, a PyTorch that
# runs on the CPU, and onnxruntime -- all from PyPI. Re-running is cheap: a
# stamp file records the requirement set that was last installed, and the
# install is skipped when it matches.
#
# About PyTorch: PyPI's Linux x86_64 torch wheels are CUDA builds. There is no
# CPU-only torch wheel for this platform on PyPI (the "+cpu" builds live on a
# separate index this project cannot reach). `torch --no-deps` alone does not
# import: libtorch_global_deps/libtorch_cuda/libtorch_python are dynamically
# linked against cudart, cublas, cudnn, cufft, cusparse, cusparseLt, nccl,
# nvrtc, nvshmem, cufile and cupti, so those runtime wheels must be present even
# though no GPU is ever used. What *can* be left out are the parts torch only
# loads lazily: triton (the GPU compiler, ~270 MB wheel), cuda-bindings, and the
# cusolver/nvtx toolkit components. This script installs torch with --no-deps,
# then exactly torch's declared requirements minus those, and checks that
# `import torch` works; if it does not, it falls back to a plain full install.
#
# The last line of stdout is the path of the venv's python interpreter:
#   PY=$(bash scripts/python-embed-peers.sh | tail -n1)
set -euo pipefail

CACHE_DIR="${ZHIKU_CACHE_DIR:-$HOME/.cache/zhiku}"
VENV="$CACHE_DIR/venv-embed"
STAMP="$VENV/.zhiku-embed-stamp"
PYTHON="${PYTHON:-python3}"

TORCH="torch==2.15.0"
# Requirements of torch that are not needed to import it and run on the CPU.
SKIP_DISTS="triton cuda-bindings"
SKIP_TOOLKIT_EXTRAS="cusolver nvtx"
# Everything else. sentence-transformers is installed with --no-deps last
# (otherwise pip's resolver re-walks torch's requirements and pulls triton
# etc. back in), so its own requirements are listed here.
REQS=(
  "numpy>=1.24"
  "safetensors==0.8.0"
  "tokenizers==0.23.3"
  "transformers==5.24.0"
  "huggingface-hub>=1.31,<3"
  "scikit-learn>=1.1"
  "scipy>=1.0"
  "tqdm>=4.60"
  "typing_extensions>=4.13"
  "onnxruntime==1.32.0"
  # Lets embed_peer.py --export-onnx write an ONNX file with torch.onnx.
  "onnx==1.23.2"
)
ST="sentence-transformers==6.2.0"
WANT="$TORCH skip=[$SKIP_DISTS|$SKIP_TOOLKIT_EXTRAS] ${REQS[*]} $ST"

PIP_FLAGS=(--disable-pip-version-check --quiet)

mkdir -p "$CACHE_DIR"

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "creating venv at $VENV" >&2
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "embedding peer packages already installed" >&2
  echo "$PY"
  exit 0
fi

rm -f "$STAMP"
start=$(date +%s)

echo "installing $TORCH (--no-deps)" >&2
"$PY" -m pip install "${PIP_FLAGS[@]}" packaging >&2
"$PY" -m pip install "${PIP_FLAGS[@]}" --no-deps "$TORCH" >&2

# torch's own requirement list, evaluated for this interpreter and platform,
# minus the lazily loaded GPU-only parts.
mapfile -t TORCH_DEPS < <(
  SKIP_DISTS="$SKIP_DISTS" SKIP_TOOLKIT_EXTRAS="$SKIP_TOOLKIT_EXTRAS" "$PY" - <<'EOF'
import os
from importlib.metadata import requires
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

skip = {canonicalize_name(n) for n in os.environ["SKIP_DISTS"].split()}
skip_extras = set(os.environ["SKIP_TOOLKIT_EXTRAS"].split())
for line in requires("torch") or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    name = canonicalize_name(req.name)
    if name in skip:
        continue
    if name == "cuda-toolkit":
        req.extras = {e for e in req.extras if e not in skip_extras}
    req.marker = None
    print(str(req))
EOF
)
echo "installing torch runtime requirements: ${TORCH_DEPS[*]}" >&2
"$PY" -m pip install "${PIP_FLAGS[@]}" "${TORCH_DEPS[@]}" >&2

if ! "$PY" -c "import torch; torch.ones(2) @ torch.ones(2)" >/dev/null 2>&1; then
  echo "slim torch install does not import; falling back to the full $TORCH" >&2
  "$PY" -m pip install "${PIP_FLAGS[@]}" "$TORCH" >&2
fi

echo "installing: ${REQS[*]}" >&2
"$PY" -m pip install "${PIP_FLAGS[@]}" "${REQS[@]}" >&2
"$PY" -m pip install "${PIP_FLAGS[@]}" --no-deps "$ST" >&2

"$PY" - >&2 <<'EOF'
import onnxruntime, safetensors, sentence_transformers, tokenizers, torch, numpy
print(f"torch {torch.__version__} (cuda available: {torch.cuda.is_available()}), "
      f"sentence-transformers {sentence_transformers.__version__}, "
      f"onnxruntime {onnxruntime.__version__}, numpy {numpy.__version__}")
EOF

printf '%s' "$WANT" > "$STAMP"
echo "venv ready in $(( $(date +%s) - start ))s: $(du -sh "$VENV" | cut -f1)" >&2
echo "$PY"
