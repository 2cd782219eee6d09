"""The article's demo: files written, every element printed, PASS/FAIL and exit status."""

from __future__ import annotations

import numpy as np
import pytest

from models import demo_elugrad as demo
from ort_ops import dtypes
from ort_ops.reference import elu_grad


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_demo_writes_inputs_outputs_and_passes(tmp_path, capsys, dtype):
    assert demo.main(["--dtype", dtype, "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert text.count("  PASS: ") == 2 and "FAIL" not in text
    assert text.count("y[") == 16
    assert "EluGrad ran on CPUExecutionProvider" in text
    np_dtype = dtypes.numpy_dtype(dtype)
    for case in ("article", "random"):
        prefix = tmp_path / f"elugrad_{case}_{dtype}_cpu"
        g = np.fromfile(f"{prefix}_input_0.bin", dtype=np_dtype).reshape(demo.SHAPE)
        a = np.fromfile(f"{prefix}_input_1.bin", dtype=np_dtype).reshape(demo.SHAPE)
        y = np.fromfile(f"{prefix}_output_0.bin", dtype=np_dtype).reshape(demo.SHAPE)
        assert (tmp_path / f"elugrad_{case}_{dtype}_cpu.onnx").stat().st_size > 0
        np.testing.assert_array_equal(y.view(np.uint8), elu_grad(g, a).view(np.uint8))
        if case == "article":
            assert (g.astype(np.float32) == 2.0).all() and (y.astype(np.float32) == 2.0).all()
        else:
            assert (a.astype(np.float32) < 0).any()  # the negative branch shows


def test_demo_reports_fail_and_exits_non_zero(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(demo, "elu_grad", lambda g, a: elu_grad(g, a, 0.5))
    assert demo.main(["--dtype", "float32", "--out", str(tmp_path)]) == 1
    assert "FAIL: random" in capsys.readouterr().out
