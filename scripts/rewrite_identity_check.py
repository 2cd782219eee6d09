"""Check that two revisions of ``ort_ops.rewrite`` fuse every graph of a corpus to the same bytes
and report the same sites (rule, status, reason, notes, ...).

  collect CORPUS [PYTEST ARGS]  run pytest (default: tests/rewrite tests/training) recording the
                                input of every fuse_elu_grad / fuse_training / inspect_* call, and
                                add the fixtures, the bench_rewrite chains and derived variants
                                (nodes unnamed, the graph moved into a function's call site)
  compare CORPUS OTHER_CHECKOUT fuse the corpus with this checkout and OTHER's, each in its own
                                interpreter, and compare SerializeToString bytes and the reports

Usage: .venv/bin/python scripts/rewrite_identity_check.py collect /tmp/corpus
       .venv/bin/python scripts/rewrite_identity_check.py compare /tmp/corpus /work/wt/base438
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PASSES = ("fuse_elu_grad", "fuse_training", "inspect_elu_grad", "inspect_training")


# -- recording: a pytest plugin (this file, loaded with -p) ---------------------------------------
def _record_into(corpus: Path) -> None:
    import onnx

    import ort_ops.rewrite as rewrite
    import ort_ops.rewrite.fuse as fuse_module

    corpus.mkdir(parents=True, exist_ok=True)
    depth = [0]

    def wrap(name):
        inner = getattr(fuse_module, name)

        def recorded(model, *args, **kwargs):
            if depth[0] == 0:
                try:
                    _save(corpus, model, name, args, kwargs)
                except Exception as exc:  # an input the pass itself rejects: nothing to compare
                    print(f"rewrite_identity_check: not recorded ({exc!r})", file=sys.stderr)
            depth[0] += 1
            try:
                return inner(model, *args, **kwargs)
            finally:
                depth[0] -= 1

        return recorded

    def _save(corpus, model, name, args, kwargs):
        base_dir = kwargs.get("base_dir")
        if isinstance(model, (str, os.PathLike)):
            path = Path(model)
            base_dir = base_dir or str(path.parent)
            model = onnx.load(str(path), load_external_data=False)
        if not isinstance(model, onnx.ModelProto):
            return
        data = model.SerializeToString()
        key = hashlib.sha256(data).hexdigest()[:20]
        entry = corpus / key
        entry.mkdir(exist_ok=True)
        (entry / "model.onnx").write_bytes(data)
        if base_dir is not None and not (entry / "data").exists():
            shutil.copytree(base_dir, entry / "data", ignore=shutil.ignore_patterns("*.onnx"))
        strict = args[0] if args else kwargs.get("strict", False)
        rules = kwargs.get("rules")
        call = {"pass": name, "strict": bool(strict),
                "rules": None if rules is None else [r.name for r in rules]}
        calls_file = entry / "calls.json"
        calls = json.loads(calls_file.read_text()) if calls_file.exists() else []
        if call not in calls:
            calls.append(call)
        calls_file.write_text(json.dumps(calls))

    for name in PASSES:
        wrapped = wrap(name)
        setattr(fuse_module, name, wrapped)
        setattr(rewrite, name, wrapped)


def pytest_configure(config):  # the plugin hook: record into $REWRITE_CORPUS
    if os.environ.get("REWRITE_CORPUS"):
        _record_into(Path(os.environ["REWRITE_CORPUS"]))


# -- the corpus beyond the tests ------------------------------------------------------------------
def _add(corpus: Path, model, calls=None) -> None:
    data = model.SerializeToString()
    entry = corpus / hashlib.sha256(data).hexdigest()[:20]
    entry.mkdir(parents=True, exist_ok=True)
    (entry / "model.onnx").write_bytes(data)
    calls = calls or [{"pass": p, "strict": s, "rules": None} for p in PASSES for s in (False, True)]
    (entry / "calls.json").write_text(json.dumps(calls))


def _unnamed(model):
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model)
    for node in out.graph.node:
        node.name = ""
    return out


def _with_function(model):
    """The model with an unused local function (forces the subgraph/function path)."""
    import onnx
    from onnx import helper

    out = onnx.ModelProto()
    out.CopyFrom(model)
    fn = helper.make_function("local.test", "Twice", ["a"], ["b"], [helper.make_node("Add", ["a", "a"], ["b"])],
                              [helper.make_opsetid("", 18)])
    out.functions.append(fn)
    if not any(o.domain == "local.test" for o in out.opset_import):
        out.opset_import.append(helper.make_opsetid("local.test", 1))
    return out


def collect(corpus: Path, pytest_args: list[str]) -> None:
    import onnx

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_rewrite import chain

    corpus.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "REWRITE_CORPUS": str(corpus), "PYTHONPATH": str(ROOT / "scripts")}
    args = pytest_args or ["tests/rewrite", "tests/training"]
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "rewrite_identity_check", *args],
                   cwd=ROOT, env=env, check=False)
    for n in (1000, 10000, 100000):
        _add(corpus, chain(n))
        _add(corpus, chain(n, with_backward=False), [{"pass": "fuse_elu_grad", "strict": False, "rules": None}])
    for path in sorted((ROOT / "tests" / "fixtures").glob("*.onnx")):
        _add(corpus, onnx.load(str(path)))
    singles = []
    for entry in sorted(corpus.iterdir()):
        model = onnx.load(str(entry / "model.onnx"), load_external_data=False)
        if len(model.graph.node) <= 5000 and not (entry / "data").exists():
            singles.append(model)
    for model in singles:
        _add(corpus, _unnamed(model))
        if not model.functions:
            _add(corpus, _with_function(model))
    print(f"corpus: {sum(1 for _ in corpus.iterdir())} graphs in {corpus}")


# -- replay in one revision -------------------------------------------------------------------------
_REPLAY = r"""
import json, pickle, sys, hashlib
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import onnx
import ort_ops.rewrite as rewrite
from ort_ops.rewrite import RewriteReport
from ort_ops.rewrite.rules import TRAINING_RULES
by_name = {r.name: r for r in TRAINING_RULES}
results = {}
for entry in sorted(Path(sys.argv[2]).iterdir()):
    model = onnx.load(str(entry / "model.onnx"), load_external_data=False)
    base_dir = str(entry / "data") if (entry / "data").exists() else None
    for call in json.loads((entry / "calls.json").read_text()):
        key = (entry.name, call["pass"], call["strict"], tuple(call["rules"] or ()))
        kwargs = {"base_dir": base_dir}
        if call["rules"] is not None:
            kwargs["rules"] = tuple(by_name[n] for n in call["rules"])
        try:
            if call["pass"].startswith("inspect"):
                report = getattr(rewrite, call["pass"])(model, call["strict"], **kwargs)
                out = b""
            else:
                report = RewriteReport()
                out = getattr(rewrite, call["pass"])(model, call["strict"], report=report, **kwargs).SerializeToString()
            results[key] = (hashlib.sha256(out).hexdigest(), report.to_dict(), None)
        except Exception as exc:
            results[key] = (None, None, f"{type(exc).__name__}: {exc}")
pickle.dump(results, open(sys.argv[3], "wb"))
"""


def replay(checkout: str, corpus: Path, out: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-c", _REPLAY, checkout, str(corpus), str(out)], cwd=checkout, env=env,
                   check=True)
    return pickle.loads(out.read_bytes())


def compare(corpus: Path, other: str) -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        mine = replay(str(ROOT), corpus, Path(tmp) / "mine.pkl")
        base = replay(os.path.abspath(other), corpus, Path(tmp) / "base.pkl")
    graphs = {key[0] for key in base}
    differ = [key for key in sorted(base) if mine.get(key) != base[key]]
    for key in differ[:20]:
        a, b = mine.get(key), base[key]
        what = "bytes" if a and a[0] != b[0] else "report" if a and a[1] != b[1] else "error"
        print(f"DIFFERENT ({what}): {key}\n  here: {a and (a[0], a[2])}\n  base: {(b[0], b[2])}")
    errors = sum(1 for v in base.values() if v[2] is not None)
    print(f"{len(graphs)} graphs, {len(base)} calls ({errors} raise in both), "
          f"{len(base) - len(differ)} identical (bytes and report), {len(differ)} different")
    return 1 if differ else 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "collect":
        collect(Path(argv[1]).resolve(), argv[2:])
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(Path(argv[1]).resolve(), argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
