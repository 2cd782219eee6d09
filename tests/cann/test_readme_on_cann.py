"""The README's .venv-cann blocks run as written (after its training snippet, run in .venv: they
read the graph and the parameters it writes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from readme_snippets import ROOT, run, snippets


def test_readme_cann_blocks_run_as_written(tmp_path):
    import onnxruntime as ort

    if "CANNExecutionProvider" not in ort.get_available_providers():
        pytest.skip("no CANN EP in this onnxruntime (run in .venv-cann)")
    main_python = ROOT / ".venv" / "bin" / "python"
    if not main_python.exists():
        pytest.skip(".venv (with torch, for the training snippet) is missing: run scripts/setup.sh")
    blocks = snippets()
    training = next(s for s in blocks if s.venv == ".venv" and "export_training_graph" in s.code)
    cli = next(s for s in blocks if s.venv == ".venv" and s.lang == "bash" and "ortops-rewrite fuse" in s.code)
    for s in (training, cli):
        result = run(s, tmp_path, python=str(main_python))
        assert result.returncode == 0, result.stderr[-3000:]
    cann = [s for s in blocks if s.venv == ".venv-cann"]
    assert cann
    for s in cann:
        result = run(s, tmp_path)
        assert result.returncode == 0, f"README block {s.index} failed:\n{result.stderr[-3000:]}"
    assert "CANNExecutionProvider" in result.stdout
    assert Path(tmp_path / "train.onnx").is_file()
