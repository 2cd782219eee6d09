#!/usr/bin/env bash
# The article's demo: EluGrad on ONNX Runtime's CPU EP (.venv) and on the CANN EP (.venv-cann,
# on the ACL simulator when there is no NPU). Extra arguments go to both runs, e.g. --dtype.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
.venv/bin/python -m ort_ops.demo --ep cpu "$@"
if [ -x .venv-cann/bin/python ]; then
  echo
  .venv-cann/bin/python -m ort_ops.demo --ep cann "$@"
fi
