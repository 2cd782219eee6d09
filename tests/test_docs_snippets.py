"""The code blocks of docs/*.md run as written: each file's python blocks marked ``run in .venv``,
concatenated in order, in ONE fresh Python process, in a folder outside the checkout and against
the installed package (tests/readme_snippets.py's ``run``); its ``.venv-cann`` blocks in
tests/cann/test_docs_snippets_on_cann.py. Every python and bash block says where it runs."""

from __future__ import annotations

import re

import pytest

from readme_snippets import ROOT, Snippet, run, snippets

DOCS = sorted((ROOT / "docs").rglob("*.md"))
RUNNABLE = ("python", "bash")  # blocks without a language are output shown to the reader


def story(path, venv: str) -> Snippet:
    """The python blocks of ``path`` for ``venv``, in order, as one snippet."""
    code = "\n".join(s.code for s in snippets(path) if s.venv == venv and s.lang == "python")
    return Snippet(0, "python", code, f"run in {venv}")


def runnable_docs(venv: str) -> list:
    return [p for p in DOCS if story(p, venv).code]


def _name(path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", DOCS, ids=_name)
def test_every_block_says_where_it_runs(path):
    for s in snippets(path):
        if s.lang not in RUNNABLE:
            continue
        assert s.marker.startswith(("run in .venv", "skip")), f"{_name(path)} block {s.index} ({s.lang}) has no marker"
        if s.marker.startswith("skip"):
            assert "(" in s.marker, f"{_name(path)} block {s.index}: say why it is not run"
        assert s.lang == "python" or s.marker.startswith("skip"), \
            f"{_name(path)} block {s.index}: only python blocks run (in one process); skip a {s.lang} block, saying why"


def test_the_docs_with_code_are_covered():
    assert [_name(p) for p in runnable_docs(".venv")] == ["docs/bring-your-own-model.md"]
    assert [_name(p) for p in runnable_docs(".venv-cann")] == ["docs/placement.md"]


# what each story teaches is true (checked in its process, after its blocks)
CHECKS = {
    "docs/bring-your-own-model.md": """
assert re.match(r"fuse: 1 site\\(s\\) rewritten\\b.*, 0 rejected", report.summary()), report.summary()
assert [n.op_type for n in graph.graph.node if n.domain == "ai.ortops"] == ["EluGrad"]
assert len(losses) == len(batches) and np.mean(losses[-8:]) < 0.95 * np.mean(losses[:8]), losses  # the loss falls
assert not export_info.state_buffers and not export_info.toolkit_ops, export_info  # no BatchNorm, no conv
assert [i.name for i in deployed.graph.input] == ["input"], deployed.graph.input
""",
}


@pytest.mark.parametrize("path", runnable_docs(".venv"), ids=_name)
def test_docs_python_blocks_run_as_one_story(path, tmp_path):
    snippet = story(path, ".venv")
    snippet.code += "\nimport re\n" + CHECKS.get(_name(path), "")
    result = run(snippet, tmp_path)
    assert result.returncode == 0, f"{_name(path)} failed:\n{snippet.code}\n--- stderr:\n{result.stderr[-3000:]}"
    assert not re.search(r"Traceback", result.stderr)
