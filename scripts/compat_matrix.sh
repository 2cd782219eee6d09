#!/usr/bin/env bash
# Compatibility matrix of the built ort-ops wheel: for each entry below, a throwaway venv
# build/compat/<name> (deleted and recreated every run) gets one ONNX Runtime release pinned (or
# none: the base install), its NumPy, onnx, ml-dtypes, onnx-graphsurgeon, then the wheel with
# --no-deps; scripts/compat_check.py runs there and prints one JSON line. At the end a Markdown
# table of all entries is printed on stdout (and written to build/compat/table.md).
#
#   usage: scripts/compat_matrix.sh [NAME...]        (default: every entry; see MATRIX below)
#   env:   WHEEL=path.whl      the wheel to test (default: build/wheelhouse/ort_ops-*.whl)
#          COMPAT_OFFLINE=1    install only from the wheel cache build/compat/.wheels (no index)
#          COMPAT_KEEP=1       keep each venv after its check (default: removed, ~300 MB each)
#
# Downloads: every requirement is fetched once with `pip download` into build/compat/.wheels
# (by the entry's own Python, so the tags match) and installed from there with --no-index: a rerun
# downloads nothing. Results: build/compat/results/<name>.json, logs: build/compat/logs/<name>.log.
# Progress goes to stderr. Exits non-zero if any entry failed to install or had a failed check.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
# ONNX Runtime >= 1.29's telemetry uploader thread can crash the process at exit
export ORT_DISABLE_TELEMETRY=1
export PIP_DISABLE_PIP_VERSION_CHECK=1
unset ORTOPS_LIBRARY ACLSIM_LIBRARY_DIR ORTOPS_FORCE_PORTABLE PYTHONPATH

pyenv=/root/.pyenv/versions
PY310=$pyenv/3.10.13/bin/python
PY311=$pyenv/3.11.7/bin/python
PY312=$pyenv/3.12.1/bin/python
PY313=$pyenv/3.13.0/bin/python
# Shared by every entry: graphsurgeon as in requirements/.
COMMON=("onnx-graphsurgeon==0.6.1" "ml-dtypes>=0.4")
# onnx unless the entry names one: 1.23.2 (the project's pin) has wheels for 3.10-3.13
ONNX_DEFAULT="onnx==1.23.2"

# name | python | runtime requirement ("-": base install, no onnxruntime) | numpy requirement [| onnx]
# ORT < 1.19 and onnxruntime-cann were built against NumPy 1.x (numpy<2); the project needs >= 1.26.
# The onnx-* entries: every onnx minor release from pyproject.toml's floor (onnx>=1.16) to the
# newest, with the project's runtime pin. onnxruntime-training supports onnx <= 1.17.
MATRIX=(
  "ort-1.17.3|$PY311|onnxruntime==1.17.3|numpy>=1.26,<2"
  "ort-1.18.1|$PY311|onnxruntime==1.18.1|numpy>=1.26,<2"
  "ort-1.19.2|$PY311|onnxruntime==1.19.2|numpy>=1.26"
  "ort-1.20.1|$PY311|onnxruntime==1.20.1|numpy>=1.26"
  "ort-1.22.1|$PY311|onnxruntime==1.22.1|numpy>=1.26"
  "ort-1.29.0|$PY311|onnxruntime==1.29.0|numpy>=1.26"
  "ort-1.31.1|$PY311|onnxruntime==1.31.1|numpy>=1.26"
  "ort-1.32.0|$PY311|onnxruntime==1.32.0|numpy>=1.26"
  "cann-1.24.4|$PY311|onnxruntime-cann==1.24.4|numpy>=1.26,<2"
  "ort-training-1.19.2|$PY311|onnxruntime-training-cpu==1.19.2|numpy>=1.26|onnx==1.17.0"
  "onnx-1.16.0|$PY311|onnxruntime==1.31.1|numpy>=1.26|onnx==1.16.0"
  "onnx-1.17.0|$PY311|onnxruntime==1.31.1|numpy>=1.26|onnx==1.17.0"
  "onnx-1.18.0|$PY311|onnxruntime==1.31.1|numpy>=1.26|onnx==1.18.0"
  "onnx-1.19.1|$PY311|onnxruntime==1.31.1|numpy>=1.26|onnx==1.19.1"
  "onnx-1.20.1|$PY311|onnxruntime==1.31.1|numpy>=1.26|onnx==1.20.1"
  "onnx-1.21.0|$PY311|onnxruntime==1.31.1|numpy>=1.26|onnx==1.21.0"
  "onnx-1.22.0|$PY311|onnxruntime==1.31.1|numpy>=1.26|onnx==1.22.0"
  "base-py3.10|$PY310|-|numpy>=1.26"
  "base-py3.12|$PY312|-|numpy>=1.26"
  "base-py3.13|$PY313|-|numpy>=1.26"
)

wheel=${WHEEL:-$(ls build/wheelhouse/ort_ops-*.whl 2>/dev/null | head -n 1)}
[ -f "$wheel" ] || { echo "compat_matrix: no wheel (build/wheelhouse/ort_ops-*.whl; set WHEEL=)" >&2; exit 2; }
wheel=$(cd "$(dirname "$wheel")" && pwd)/$(basename "$wheel")
root=$repo/build/compat
cache=$root/.wheels
results=$root/results
logs=$root/logs
mkdir -p "$cache" "$results" "$logs"
log() { printf '[compat %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

selected=("$@")
wanted() {
  [ ${#selected[@]} -eq 0 ] && return 0
  local s; for s in "${selected[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1
}

# install_reqs VENV_PY LOG REQ...: from the cache; on a miss, pip download into it, then again
install_reqs() {
  local py=$1 logf=$2; shift 2
  if "$py" -m pip install --no-index --find-links "$cache" "$@" >>"$logf" 2>&1; then return 0; fi
  if [ "${COMPAT_OFFLINE:-0}" = 1 ]; then return 1; fi
  log "  downloading into build/compat/.wheels: $*"
  "$py" -m pip download -d "$cache" "$@" >>"$logf" 2>&1 || return 1
  "$py" -m pip install --no-index --find-links "$cache" "$@" >>"$logf" 2>&1
}

write_failure() {  # write_failure NAME PYTHON RUNTIME MESSAGE
  "$PY311" - "$@" >"$results/$1.json" <<'EOF'
import json, sys
name, python, runtime, message = sys.argv[1:5]
print(json.dumps({"name": name, "python": python, "runtime": runtime, "install_error": message,
                  "ok": False, "checks": {}}))
EOF
}

status=0
started=$(date +%s)
names=()
for entry in "${MATRIX[@]}"; do
  IFS='|' read -r name python runtime numpy_req onnx_req <<<"$entry"
  wanted "$name" || continue
  names+=("$name")
  venv=$root/$name
  logf=$logs/$name.log
  : >"$logf"
  rm -f "$results/$name.json"
  pyver=$("$python" -c 'import platform; print(platform.python_version())')
  t0=$(date +%s)
  log "$name: Python $pyver, runtime ${runtime/#-/none (base install)}"
  rm -rf "$venv"
  if ! "$python" -m venv "$venv" >>"$logf" 2>&1; then
    write_failure "$name" "$pyver" "$runtime" "python -m venv failed (see build/compat/logs/$name.log)"
    status=1; continue
  fi
  vpy=$venv/bin/python
  reqs=("$numpy_req" "${onnx_req:-$ONNX_DEFAULT}" "${COMMON[@]}")
  [ "$runtime" != - ] && reqs=("$runtime" "${reqs[@]}")
  log "  pip install ${reqs[*]}"
  if ! install_reqs "$vpy" "$logf" "${reqs[@]}"; then
    msg=$(grep -E '^ERROR' "$logf" | tail -n 3 | tr '\n' ' ')
    log "  INSTALL FAILED: $msg"
    write_failure "$name" "$pyver" "$runtime" "pip install ${reqs[*]} failed: ${msg:-see build/compat/logs/$name.log}"
    status=1; [ "${COMPAT_KEEP:-0}" = 1 ] || rm -rf "$venv"; continue
  fi
  log "  pip install --no-deps $(basename "$wheel")"
  if ! "$vpy" -m pip install --no-deps "$wheel" >>"$logf" 2>&1; then
    write_failure "$name" "$pyver" "$runtime" "pip install --no-deps of the wheel failed"
    status=1; [ "${COMPAT_KEEP:-0}" = 1 ] || rm -rf "$venv"; continue
  fi
  { echo "== pip freeze"; "$vpy" -m pip freeze; echo "== pip check"; "$vpy" -m pip check; } >>"$logf" 2>&1
  log "  running compat_check.py"
  # from inside the venv folder: nothing of the source checkout can be imported by accident
  (cd "$venv" && "$vpy" "$repo/scripts/compat_check.py" --name "$name" --out "$results/$name.json") \
    >/dev/null 2>>"$logf"
  rc=$?
  if [ ! -s "$results/$name.json" ]; then
    write_failure "$name" "$pyver" "$runtime" "compat_check.py exited $rc without a result: $(tail -n 3 "$logf" | tr '\n' ' ')"
    status=1
  elif [ $rc -ne 0 ]; then
    status=1
  fi
  "$PY311" - "$results/$name.json" <<'EOF' >&2
import json, sys
r = json.load(open(sys.argv[1]))
bad = {k: v["status"] for k, v in r.get("checks", {}).items() if v["status"] not in ("pass", "skip")}
print(f"  -> API {r.get('api_version', '-')}, IR {r.get('ir_version', '-')}, "
      + ("all checks pass" if r.get("ok") else f"NOT OK: {bad or r.get('install_error')}"))
EOF
  [ "${COMPAT_KEEP:-0}" = 1 ] || rm -rf "$venv"
  log "  $name done in $(( $(date +%s) - t0 )) s"
done
log "matrix done in $(( $(date +%s) - started )) s"

# The Markdown table, entries in matrix order.
"$PY311" - "$results" "${names[@]}" <<'EOF' | tee "$root/table.md"
import json, os, sys

results, names = sys.argv[1], sys.argv[2:]
COLUMNS = [("exit", "clean exit"), ("import", "import"), ("schema", "schema"), ("reference", "reference"), ("fuse", "fuse"),
           ("no_runtime", "no ORT"), ("api", "API check"), ("float32", "fp32"), ("float16", "fp16"),
           ("bfloat16", "bf16 (ort_io)"), ("bfloat16_cast", "bf16 (Cast)"), ("register_twice", "register x2"), ("shape_mismatch", "shape error"),
           ("cann", "CANN sim")]
CELL = {"pass": "pass", "fail": "**FAIL**", "crash": "**CRASH**", "skip": "skip"}
print("| entry | runtime | Python | onnx | NumPy | API | IR | " + " | ".join(t for _, t in COLUMNS) + " |")
print("|" + "---|" * (7 + len(COLUMNS)))
for name in names:
    path = os.path.join(results, f"{name}.json")
    r = json.load(open(path)) if os.path.isfile(path) else {"install_error": "no result"}
    pk = r.get("packages", {})
    runtime = r.get("runtime", "?")
    if runtime == "-":
        runtime = "none"
    head = [name, runtime, r.get("python", "?"), pk.get("onnx", "?"), pk.get("numpy", "?"), str(r.get("api_version", "—")),
            str(r.get("ir_version", "—"))]
    if "install_error" in r:
        cells = [f"install failed: {r['install_error'][:200]}"] + [""] * (len(COLUMNS) - 1)
    else:
        checks = r.get("checks", {})
        cells = [CELL.get(checks[k]["status"], checks[k]["status"]) if k in checks else "—" for k, _ in COLUMNS]
    print("| " + " | ".join(head + cells) + " |")
EOF
exit $status
