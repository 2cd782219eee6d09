#!/usr/bin/env bash
# Fetches ONNX Runtime's C/C++ headers (API 21) from Debian trixie's libonnxruntime-dev
# without touching the system's apt configuration, and prints the include directory.
#   usage: scripts/fetch_ort_headers.sh [DEST]      (default DEST: <repo>/.deps/onnxruntime)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=${1:-$repo/.deps/onnxruntime}
include=$dest/root/usr/include/onnxruntime
if [ -f "$include/onnxruntime_c_api.h" ]; then echo "$include"; exit 0; fi

echo "fetch_ort_headers: fetching ONNX Runtime's C/C++ headers (API 21), which the op library is" \
  "compiled against: Debian trixie's package index (about 20 MB) and libonnxruntime-dev (under 0.1 MB)" \
  "into $dest, once. Set ORT_INCLUDE_DIR to a folder holding onnxruntime_c_api.h to skip this." >&2
work=$dest/apt
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/parts"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
  > "$work/sources.list"
apt_opts=(
  -o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/parts"
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache"
  -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1"
)
apt-get "${apt_opts[@]}" -qq update >&2
(cd "$work" && apt-get "${apt_opts[@]}" -qq download libonnxruntime-dev >&2)
deb=$(ls "$work"/libonnxruntime-dev_*.deb | head -n 1)
rm -rf "$dest/root.partial" && dpkg -x "$deb" "$dest/root.partial" && rm -rf "$dest/root" \
  && mv "$dest/root.partial" "$dest/root"
echo "fetch_ort_headers: fetched $(du -sh "$dest" | cut -f1) into $dest" >&2
grep -q "define ORT_API_VERSION" "$include/onnxruntime_c_api.h" || {
  echo "fetch_ort_headers: $deb has no onnxruntime_c_api.h" >&2; exit 1; }
echo "$include"
