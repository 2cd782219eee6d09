#!/usr/bin/env bash
# Sets everything up on a fresh machine, idempotently:
#   .venv/       onnxruntime (CPU), test/benchmark tools, PyTorch CPU, and this project;
#   .venv-cann/  onnxruntime-cann (needs numpy<2, conflicts with onnxruntime) and this project;
#   .venv-ort-training/  onnxruntime-training-cpu 1.19.2 (ORT's own training stack; Python <= 3.11,
#                onnx 1.17), torch, and this project; left out, with the reason, without such a Python;
#   .deps/       ONNX Runtime headers (Debian) and ACL headers (torch_npu wheel), fetched;
#   the op library and the ACL simulator, built once into one wheel installed in both venvs.
# Environment: PYTHON (default python3), ORTOPS_SKIP_CANN=1 to leave out .venv-cann,
# ORTOPS_SKIP_ORT_TRAINING=1 to leave out .venv-ort-training, ORTOPS_TRAINING_PYTHON (default: the
# first of $PYTHON, python3.11, python3.10 that is 3.10 or 3.11) for it.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
python=${PYTHON:-python3}
log() { printf '[setup] %s\n' "$*" >&2; }
pip_quiet=(--quiet --disable-pip-version-check)

make_venv() {  # make_venv DIR REQUIREMENTS [PYTHON]
  if [ ! -x "$1/bin/python" ]; then
    log "creating $1"
    "${3:-$python}" -m venv "$1"
  fi
  log "installing $2 into $1"
  "$1/bin/python" -m pip install "${pip_quiet[@]}" -r "$2"
}

# onnxruntime-training's last release (1.19.2) has wheels for Python <= 3.11 only
ort_training_python() {
  local candidate
  for candidate in ${ORTOPS_TRAINING_PYTHON:-} "$python" python3.11 python3.10; do
    command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" -c 'import sys; sys.exit(not (3, 10) <= sys.version_info[:2] <= (3, 11))' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  return 1
}

make_venv .venv requirements/cpu.txt
[ "${ORTOPS_SKIP_CANN:-0}" = 1 ] || make_venv .venv-cann requirements/cann.txt
skip_ort_training=${ORTOPS_SKIP_ORT_TRAINING:-0}
if [ "$skip_ort_training" = 1 ]; then
  log "leaving out .venv-ort-training (ORTOPS_SKIP_ORT_TRAINING=1)"
elif training_python=$(ort_training_python); then
  # torch first, pinned: onnxruntime-training does not require it but its training API imports it,
  # and pip must never resolve another torch (the other releases are multi-GB CUDA builds)
  if [ ! -x .venv-ort-training/bin/python ]; then
    log "creating .venv-ort-training ($training_python)"
    "$training_python" -m venv .venv-ort-training
  fi
  log "installing torch==2.13.0 into .venv-ort-training"
  .venv-ort-training/bin/python -m pip install "${pip_quiet[@]}" torch==2.13.0
  make_venv .venv-ort-training requirements/ort-training.txt
else
  log "leaving out .venv-ort-training: no Python 3.10 or 3.11 found (tried" ${ORTOPS_TRAINING_PYTHON:-} \
      "$python python3.11 python3.10); onnxruntime-training 1.19.2 has no wheel for newer Pythons"
  skip_ort_training=1
fi

log "fetching headers"
ort_include=$(bash scripts/fetch_ort_headers.sh)
cmake_defs=(-C "cmake.define.ORT_INCLUDE_DIR=$ort_include")
if [ -f scripts/fetch_acl_headers.sh ]; then
  acl_include=$(PYTHON=.venv/bin/python bash scripts/fetch_acl_headers.sh)
  cmake_defs+=(-C "cmake.define.ACL_INCLUDE_DIR=$acl_include")
fi

log "building the op library wheel (manylinux, repaired by auditwheel)"
wheel=$(PYTHON=.venv/bin/python bash scripts/build_wheel.sh "${cmake_defs[@]}")
for venv in .venv .venv-cann .venv-ort-training; do
  [ -x "$venv/bin/python" ] || continue
  [ "$venv" = .venv-cann ] && [ "${ORTOPS_SKIP_CANN:-0}" = 1 ] && continue
  [ "$venv" = .venv-ort-training ] && [ "$skip_ort_training" = 1 ] && continue
  log "installing $(basename "$wheel") into $venv"
  "$venv/bin/python" -m pip install "${pip_quiet[@]}" --no-deps --force-reinstall "$wheel"
done
log "done"
