#!/usr/bin/env bash
# Runs the whole test suite once, each part against the build it is meant for:
#   1. lint (ruff, clang-format);
#   2. the main suite in .venv against the installed wheel (the CPU kernels, rewrite, training);
#   3. the ORT-training suite in .venv-ort-training (ORT's own training stack), where it exists;
#   4. the README's and docs' CANN snippets in .venv-cann against the installed wheel (what a user
#      runs);
#   5. the CANN EP suite (tests/cann) and the CPU op tests (tests/ops, tests/models) against an
#      AddressSanitizer + UBSan build of the library and the ACL simulator
#      (scripts/asan_tests.sh): the CANN kernels and the simulator run there, sanitized, once.
#      It runs in the background beside stages 2-4 (its output follows theirs).
# Exits non-zero if any part fails. Run scripts/setup.sh first (the README's test command does
# both). Extra arguments go to every pytest run (e.g. -x, -k EXPR, --durations=20).
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
# ONNX Runtime >= 1.29's telemetry uploader thread can crash the process at exit (it reads a
# static string exit() has freed): off, ORT's own switch (see tests/conftest.py)
export ORT_DISABLE_TELEMETRY=1
status=0
# the snippet tests run the installed wheel: they are stage 4, not part of the sanitizer run
user_snippets=(tests/cann/test_readme_on_cann.py tests/cann/test_docs_snippets_on_cann.py)

echo "== 1. lint (ruff, clang-format)"
bash scripts/lint.sh || status=1

# Stage 5 (the sanitizer build, then the CANN suite on it) runs beside stages 2-4: most of each is
# one Python process, and the machine has two cores. Its output is printed after stage 4.
asan_log=$(mktemp)
bash scripts/asan_tests.sh $(printf -- '--deselect %s ' "${user_snippets[@]}") "$@" > "$asan_log" 2>&1 &
asan_pid=$!

echo "== 2. main suite (.venv, the installed wheel): tests/ except tests/cann and tests/ort_training"
.venv/bin/python -m pytest tests --ignore=tests/cann --ignore=tests/ort_training -q "$@" || status=1

if [ -x .venv-ort-training/bin/python ]; then
  echo "== 3. ORT-training suite (.venv-ort-training): tests/ort_training"
  .venv-ort-training/bin/python -m pytest tests/ort_training -q "$@" || status=1
else
  echo "== 3. ORT-training suite SKIPPED: no .venv-ort-training (scripts/setup.sh leaves it out without Python 3.10/3.11)"
fi

if [ -d tests/cann ] && [ -x .venv-cann/bin/python ]; then
  echo "== 4. README and docs snippets on the CANN EP (.venv-cann, the installed wheel)"
  .venv-cann/bin/python -m pytest "${user_snippets[@]}" -q "$@" || status=1
elif [ -d tests/cann ]; then
  echo "== CANN suite NOT RUN: .venv-cann is missing (run scripts/setup.sh)"; status=1
fi

echo "== 5. CANN EP suite and CPU op tests on the AddressSanitizer + UBSan build (scripts/asan_tests.sh; ran beside 2-4)"
wait "$asan_pid" || status=1
cat "$asan_log"
rm -f "$asan_log"

exit $status
