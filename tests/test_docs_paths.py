"""Every repository path a doc names in backticks exists (stale paths in docs/ops/EluGrad.md
pointed at files that had moved)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP = ("ort_ops/", "rewrite/", "cann_ep/", "models/", "tests/", "benchmarks/", "scripts/", "docs/")
# placeholders of the recipes (an op "Foo", a family "x") and install-time locations
NOT_PATHS = re.compile(r"/foo\b|/Foo\.|/x\.cc$|/x/|^ort_ops/cann_ep/sim/lib$")
DOCS = sorted(["README.md", "CONTRIBUTING.md", "cann_ep/sim/README.md",
               *(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))])


def named_paths(text: str) -> list[str]:
    out = []
    for m in re.finditer(r"`([^`\s]+)`", text):
        path = m.group(1).split("::")[0].split(":")[0].rstrip(".,")
        if path.startswith(TOP) and not re.search(r"[*<>{}$]", path) and not NOT_PATHS.search(path):
            out.append(path)
    return out


def test_the_scan_finds_paths():
    assert named_paths("see `ort_ops/csrc/cpu/` and `tests/x.py::test` and `not/a/path`") == [
        "ort_ops/csrc/cpu/", "tests/x.py"]


@pytest.mark.parametrize("doc", DOCS)
def test_paths_named_in_docs_exist(doc):
    missing = [p for p in named_paths((ROOT / doc).read_text(encoding="utf-8")) if not (ROOT / p).exists()]
    assert not missing, f"{doc} names paths that do not exist: {missing}"
