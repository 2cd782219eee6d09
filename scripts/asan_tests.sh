#!/usr/bin/env bash
# Builds the op library and the ACL simulator with AddressSanitizer + UndefinedBehaviorSanitizer
# into build/asan and runs the op tests (.venv) and the CANN EP tests (.venv-cann) against them
# (scripts/run_tests.sh runs the CANN suite only here). Extra arguments go to both pytest runs.
# Python itself is not instrumented: the sanitizer runtimes are preloaded; leak detection is off
# because CPython keeps memory until exit by design (the simulator reports its own leaks).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
# ONNX Runtime >= 1.29's telemetry uploader thread can crash the process at exit (it reads a
# static string exit() has freed): off, ORT's own switch (see tests/conftest.py)
export ORT_DISABLE_TELEMETRY=1
ort_include=$(bash scripts/fetch_ort_headers.sh)
acl_include=$(PYTHON=.venv/bin/python bash scripts/fetch_acl_headers.sh)
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DORTOPS_SANITIZE=ON -DORTOPS_BUILD_ACL_SIM=ON \
  -DORT_INCLUDE_DIR="$ort_include" -DACL_INCLUDE_DIR="$acl_include" > build/asan.log 2>&1 \
  || { cat build/asan.log; exit 1; }
cmake --build build/asan >> build/asan.log 2>&1 || { cat build/asan.log; exit 1; }
export ORTOPS_LIBRARY="$repo/build/asan/libortops.so"
export ACLSIM_LIBRARY_DIR="$repo/build/asan/cann_ep/sim"
export LD_PRELOAD="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libubsan.so)"
# Reports go to files as well as stderr: pytest captures a test's stderr, and a sanitizer that
# stops the process takes the captured text with it.
logs="$repo/build/asan-logs"
rm -rf "$logs" && mkdir -p "$logs"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$logs/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"
status=0
run() {
  "$@" || status=1
  if compgen -G "$logs/*" > /dev/null; then
    echo "== sanitizer reports (from $logs):"
    cat "$logs"/*
    rm -f "$logs"/*
    status=1
  fi
}
echo "-- CPU op tests (tests/ops, tests/models; .venv) on the sanitizer build"
# -m "not python_only": tests that run no native code (the build-time generator, the IR-version
# lookup, the demo's plot) check nothing more here than in the main suite, which runs them
run .venv/bin/python -m pytest -q -p no:cacheprovider -m "not python_only" \
  tests/ops tests/models "$@"
if [ -x .venv-cann/bin/python ]; then
  echo "-- CANN EP suite (tests/cann; .venv-cann) on the sanitizer build of the library and the simulator"
  run .venv-cann/bin/python -m pytest -q -p no:cacheprovider tests/cann "$@"
fi
exit $status
