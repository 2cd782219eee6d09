#!/usr/bin/env bash
# Lint: ruff (Python; configuration in pyproject.toml) and clang-format (C++; .clang-format) in
# check mode. Exits non-zero on any finding. Run by scripts/run_tests.sh.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
.venv/bin/python -m ruff check --quiet .
mapfile -t cpp < <(git ls-files --cached --others --exclude-standard 'ort_ops/csrc/*.cc' 'ort_ops/csrc/*.h' \
  'cann_ep/sim/src/*.cc' 'cann_ep/sim/src/*.h' \
  2>/dev/null || find ort_ops/csrc cann_ep/sim/src -name '*.cc' -o -name '*.h')
.venv/bin/clang-format --dry-run --Werror "${cpp[@]}"
echo "lint: ruff and clang-format clean (${#cpp[@]} C++ files)"
