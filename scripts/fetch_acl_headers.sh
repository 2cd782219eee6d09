#!/usr/bin/env bash
# Fetch the real Ascend ACL/GE headers from the PyPI wheel torch_npu (they ship in
# torch_npu/include/third_party/acl/inc/) without installing torch_npu.
#
# Usage: scripts/fetch_acl_headers.sh [DEST]      (DEST defaults to <repo>/.deps/acl)
# Result: DEST/include/acl/acl.h, DEST/include/ge/..., DEST/include/graph/...
# Prints the include dir (pass it to CMake as -DACL_INCLUDE_DIR=...) and nothing else.
# Idempotent: does nothing when the headers are already there.
# Env: PYTHON (default: python3 on PATH), TORCH_NPU_VERSION (default 2.9.1),
#      TORCH_NPU_WHEEL (use this local wheel instead of pip download).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$repo_root/.deps/acl}"
version="${TORCH_NPU_VERSION:-2.9.1}"
python="${PYTHON:-python3}"
include_dir="$dest/include"
stamp="$include_dir/.torch_npu-$version"

if [[ -f "$stamp" && -f "$include_dir/acl/acl.h" ]]; then
  echo "$include_dir"
  exit 0
fi

mkdir -p "$dest"
wheel="${TORCH_NPU_WHEEL:-}"
if [[ -z "$wheel" ]]; then
  wheel_dir="$dest/wheel"
  mkdir -p "$wheel_dir"
  wheel="$(ls "$wheel_dir"/torch_npu-"$version"-*.whl 2>/dev/null | head -n1 || true)"
  if [[ -z "$wheel" ]]; then
    echo "fetch_acl_headers: fetching the torch_npu $version wheel (about 40 MB) from PyPI into" \
      "$wheel_dir, once, for the Ascend ACL headers in it (acl/acl.h ...), which the CANN kernels and" \
      "the ACL simulator are compiled against. Set ACL_INCLUDE_DIR to skip this, or build" \
      "CPU-only (ORTOPS_WITH_CANN=OFF), which needs no ACL headers." >&2
    "$python" -m pip download --quiet --disable-pip-version-check --no-deps \
      --only-binary=:all: "torch-npu==$version" -d "$wheel_dir" >&2
    wheel="$(ls "$wheel_dir"/torch_npu-"$version"-*.whl | head -n1)"
    echo "fetch_acl_headers: fetched $(basename "$wheel") ($(du -h "$wheel" | cut -f1))" >&2
  fi
fi

tmp="$(mktemp -d "$dest/.extract.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
prefix="torch_npu/include/third_party/acl/inc"
if command -v unzip >/dev/null 2>&1; then
  unzip -q -o "$wheel" "$prefix/*" -d "$tmp"
else
  "$python" - "$wheel" "$prefix/" "$tmp" <<'PY'
import sys, zipfile
wheel, prefix, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    z.extractall(out, [n for n in z.namelist() if n.startswith(prefix)])
PY
fi
if [[ ! -f "$tmp/$prefix/acl/acl.h" ]]; then
  echo "fetch_acl_headers: $wheel has no $prefix/acl/acl.h" >&2
  exit 1
fi
rm -rf "$include_dir"
mv "$tmp/$prefix" "$include_dir"
touch "$stamp"
echo "$include_dir"
