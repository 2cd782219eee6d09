"""The docs' .venv-cann python blocks run as written (tests/test_docs_snippets.py runs the .venv
ones): each file's blocks in one process, outside the checkout, against the installed package.
placement.md's block reads a model.onnx of the user's: here one Gemm and an Elu."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from test_docs_snippets import runnable_docs, story

from ort_ops.domain import IR_VERSION, ONNX_OPSET
from readme_snippets import ROOT, run


def _model() -> onnx.ModelProto:
    """Y = Elu(Gemm(X, W, B)): Gemm with a bias of shape [N] (placed as MatMulV2), then Elu."""
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, "W")
    b = numpy_helper.from_array(np.array([0.5, -0.5, 0.0], np.float32), "B")
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["X", "W", "B"], ["H"], name="fc"),
         helper.make_node("Elu", ["H"], ["Y"], name="act")],
        "g", [helper.make_tensor_value_info("X", TP.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("Y", TP.FLOAT, [2, 3])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
    model.ir_version = IR_VERSION
    return model


def test_the_cann_docs_are_covered():
    assert [str(p.relative_to(ROOT)) for p in runnable_docs(".venv-cann")] == ["docs/placement.md"]


@pytest.mark.parametrize("path", runnable_docs(".venv-cann"), ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_cann_blocks_run_as_one_story(path, tmp_path):
    import onnxruntime as ort

    if "CANNExecutionProvider" not in ort.get_available_providers():
        pytest.skip("no CANN EP in this onnxruntime (run in .venv-cann)")
    onnx.save(_model(), tmp_path / "model.onnx")
    snippet = story(path, ".venv-cann")
    result = run(snippet, tmp_path)
    assert result.returncode == 0, f"{path.name} failed:\n{snippet.code}\n--- stderr:\n{result.stderr[-3000:]}"
    # what placement.md's table says: Gemm with a bias of shape [N] runs as MatMulV2, Elu as Elu
    assert re.search(r"placed\s+Gemm\s+fc \[MatMulV2\]", result.stdout), result.stdout
    assert re.search(r"placed\s+Elu\s+act \[Elu\]", result.stdout), result.stdout
