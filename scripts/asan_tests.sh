#!/usr/bin/env bash
# Builds the op library with AddressSanitizer + UndefinedBehaviorSanitizer into build/asan and
# runs the op tests against it (Python itself is not instrumented: the sanitizer runtimes are
# preloaded; leak detection is off because CPython keeps memory until exit by design).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
ort_include=$(bash scripts/fetch_ort_headers.sh)
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DORTOPS_SANITIZE=ON \
  -DORTOPS_BUILD_ACL_SIM=OFF -DORT_INCLUDE_DIR="$ort_include" > build/asan.log 2>&1 \
  || { cat build/asan.log; exit 1; }
cmake --build build/asan >> build/asan.log 2>&1 || { cat build/asan.log; exit 1; }
lib=$(ls build/asan/libortops.so)
preload="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libubsan.so)"
ORTOPS_LIBRARY="$repo/$lib" LD_PRELOAD="$preload" \
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  .venv/bin/python -m pytest -q -p no:cacheprovider \
    tests/test_elu_grad_cpu.py tests/test_elu_grad_errors.py tests/test_demo.py "$@"
