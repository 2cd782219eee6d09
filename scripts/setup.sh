#!/usr/bin/env bash
# Sets everything up on a fresh machine, idempotently:
#   .venv/       onnxruntime (CPU), test/benchmark tools, PyTorch CPU, and this project;
#   .venv-cann/  onnxruntime-cann (needs numpy<2, conflicts with onnxruntime) and this project;
#   .deps/       ONNX Runtime headers (Debian) and ACL headers (torch_npu wheel), fetched;
#   the op library and the ACL simulator, built once into one wheel installed in both venvs.
# Environment: PYTHON (default python3), ORTOPS_SKIP_CANN=1 to leave out .venv-cann.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
python=${PYTHON:-python3}
log() { printf '[setup] %s\n' "$*" >&2; }
pip_quiet=(--quiet --disable-pip-version-check)

make_venv() {  # make_venv DIR REQUIREMENTS
  if [ ! -x "$1/bin/python" ]; then
    log "creating $1"
    "$python" -m venv "$1"
  fi
  log "installing $2 into $1"
  "$1/bin/python" -m pip install "${pip_quiet[@]}" -r "$2"
}

make_venv .venv requirements/cpu.txt
[ "${ORTOPS_SKIP_CANN:-0}" = 1 ] || make_venv .venv-cann requirements/cann.txt

log "fetching headers"
ort_include=$(bash scripts/fetch_ort_headers.sh)
cmake_defs=(-C "cmake.define.ORT_INCLUDE_DIR=$ort_include")
if [ -f scripts/fetch_acl_headers.sh ]; then
  acl_include=$(PYTHON=.venv/bin/python bash scripts/fetch_acl_headers.sh)
  cmake_defs+=(-C "cmake.define.ACL_INCLUDE_DIR=$acl_include")
fi

log "building the op library wheel (manylinux, repaired by auditwheel)"
wheel=$(PYTHON=.venv/bin/python bash scripts/build_wheel.sh "${cmake_defs[@]}")
for venv in .venv .venv-cann; do
  [ -x "$venv/bin/python" ] || continue
  [ "$venv" = .venv-cann ] && [ "${ORTOPS_SKIP_CANN:-0}" = 1 ] && continue
  log "installing $(basename "$wheel") into $venv"
  "$venv/bin/python" -m pip install "${pip_quiet[@]}" --no-deps --force-reinstall "$wheel"
done
log "done"
