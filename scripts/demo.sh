#!/usr/bin/env bash
# The demos:
#  1. the article's EluGrad example on ONNX Runtime's CPU EP (.venv) and on the CANN EP
#     (.venv-cann, on the ACL simulator when there is no NPU); extra arguments go to both runs;
#  2. training the ELU MLP, then the ELU CNN, on scikit-learn's digits in PyTorch eager, in ORT
#     on the CPU EP with fused EluGrad, and in ORT on the CANN EP (parameters and optimizer state
#     on the device); loss curves compared and plotted (build/train_digits/<model>/).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
# ONNX Runtime >= 1.29's telemetry uploader thread can crash the process at exit (it reads a
# static string exit() has freed): off, ORT's own switch (see tests/conftest.py)
export ORT_DISABLE_TELEMETRY=1
.venv/bin/python -m models.demo_elugrad --ep cpu "$@"
if [ -x .venv-cann/bin/python ]; then
  echo
  .venv-cann/bin/python -m models.demo_elugrad --ep cann "$@"
fi
for model in mlp cnn; do
  echo
  .venv/bin/python -m models.train_digits --model "$model"
  if [ -x .venv-cann/bin/python ]; then
    echo
    .venv-cann/bin/python -m models.train_digits --model "$model" --ep cann --no-plot
    .venv/bin/python -m models.train_digits --model "$model" --plot-only
  fi
done
