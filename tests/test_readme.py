"""Every README code block runs as written (in .venv here; the .venv-cann blocks in
tests/cann/test_readme_on_cann.py), in order, in one fresh folder; every block says where it runs."""

from __future__ import annotations

import re

import pytest

from readme_snippets import run, snippets


def test_every_block_says_where_it_runs():
    for s in snippets():
        assert s.marker.startswith(("run in .venv", "skip")), f"README block {s.index} ({s.lang}) has no marker"
        if s.marker.startswith("skip"):
            assert "(" in s.marker, f"README block {s.index}: say why it is not run"


def test_readme_blocks_run_as_written(tmp_path):
    ran, out = 0, {}
    for s in snippets():
        if s.venv != ".venv":
            continue
        result = run(s, tmp_path)
        assert result.returncode == 0, f"README block {s.index} failed:\n{s.code}\n--- stderr:\n{result.stderr[-3000:]}"
        out[s.lang] = out.get(s.lang, "") + result.stdout
        ran += 1
    assert ran >= 3
    # what the snippets teach is true: the loss falls, the CLI fuses the exported graph's sites
    first, last = (float(v) for v in re.search(r"loss ([\d.]+) \(first 8 steps\) -> ([\d.]+)", out["python"]).groups())
    assert last < 0.5 * first
    fused = re.search(r"fuse: (\d+) site", out["bash"])
    assert fused and int(fused.group(1)) >= 2, out["bash"]
    assert (tmp_path / "fused.onnx").is_file() and (tmp_path / "portable.onnx").is_file()
    pytest.importorskip("onnx")
