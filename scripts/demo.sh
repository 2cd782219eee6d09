#!/usr/bin/env bash
# The demos:
#  1. the article's EluGrad example on ONNX Runtime's CPU EP (.venv) and on the CANN EP
#     (.venv-cann, on the ACL simulator when there is no NPU); extra arguments go to both runs;
#  2. training the ELU MLP on scikit-learn's digits in PyTorch eager, in ORT on the CPU EP with
#     fused EluGrad, and in ORT on the CANN EP; loss curves compared and plotted.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
.venv/bin/python -m ort_ops.demo --ep cpu "$@"
if [ -x .venv-cann/bin/python ]; then
  echo
  .venv-cann/bin/python -m ort_ops.demo --ep cann "$@"
fi
echo
.venv/bin/python -m models.train_digits
if [ -x .venv-cann/bin/python ]; then
  echo
  .venv-cann/bin/python -m models.train_digits --ep cann
  .venv/bin/python -m models.train_digits --plot-only
fi
