"""The exported ELU MLP and CNN training graphs (tests/fixtures) fused with rewrite.fuse_training
on the CANN EP: EluGrad, SoftmaxCrossEntropyLossAndGrad and (CNN) MaxPoolGrad run on
CANNExecutionProvider (ORT's profile), and the loss and every gradient equal the CPU EP's within
the float32 tolerance (ignored rows in the batch)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest

import ort_ops
from ort_ops import ort_io
from ort_ops.domain import DOMAIN
from ort_ops.tolerances import check

cann_ep = pytest.importorskip("ort_ops.cann_ep")
rewrite = pytest.importorskip("ort_ops.rewrite")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CANN, CPU = "CANNExecutionProvider", "CPUExecutionProvider"
FUSED = {"mlp_elu_fp32.onnx": {"EluGrad": 2, "SoftmaxCrossEntropyLossAndGrad": 1},
         "cnn_elu_fp32.onnx": {"EluGrad": 2, "SoftmaxCrossEntropyLossAndGrad": 1, "MaxPoolGrad": 2}}


pytestmark = pytest.mark.usefixtures("cann_simulator")


def feeds_for(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}
    target = rng.integers(0, 10, shapes["target"]).astype(np.int64)
    target[[1, 4]] = -100  # ignored rows
    return {"input": rng.standard_normal(shapes["input"]).astype(np.float32), "target": target}


@pytest.mark.parametrize("fixture", list(FUSED))
def test_fused_graph_runs_its_fused_ops_on_cann_and_equals_the_cpu_ep(fixture, tmp_path):
    import onnxruntime as ort

    model = rewrite.fuse_training(onnx.load(FIXTURES / fixture))
    assert Counter(n.op_type for n in model.graph.node if n.domain == DOMAIN) == FUSED[fixture]
    feeds = feeds_for(model)
    session = cann_ep.session(model, profile_prefix=str(tmp_path / "p"))
    names = [o.name for o in session.get_outputs()]
    got = dict(zip(names, ort_io.run(session, feeds)))
    cpu = ort.InferenceSession(model.SerializeToString(), ort_ops.register(ort.SessionOptions()), providers=[CPU])
    want = dict(zip(names, ort_io.run(cpu, feeds)))
    for name in names:
        closeness = check(got[name], want[name])
        assert closeness.ok, f"{name}: {closeness.message}"
    runs = {(r.op_type, r.provider) for r in cann_ep.node_runs(session) if r.op_type in FUSED[fixture]}
    assert runs == {(op, CANN) for op in FUSED[fixture]}
