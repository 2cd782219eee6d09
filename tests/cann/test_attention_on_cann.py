"""The attention training graphs (tests/fixtures/attention_*_fp32.onnx: an ELU
TransformerEncoderLayer, SDPA called directly, causal MultiheadAttention with a key padding mask;
models.attention_fixtures) fused with rewrite.fuse_training on the CANN EP (the ACL simulator
here; nodes the EP does not claim fall back to the CPU EP): the first step's loss and gradients,
and 20 steps of SGD-momentum / Adam training, equal the same on the CPU EP."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import ort_ops
from ort_ops import ort_io
from ort_ops.tolerances import check, tolerance_of

cann_ep = pytest.importorskip("ort_ops.cann_ep")
rewrite = pytest.importorskip("ort_ops.rewrite")

from ort_ops.training.trainer import SGD, Adam, Trainer, cpu_session_factory  # noqa: E402

pytestmark = pytest.mark.usefixtures("cann_simulator")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SETUPS = ("encoder", "sdpa", "causal")
N_CLASSES = 5  # the encoder classifier's head (models.attention_zoo.EncoderClassifier)
STEPS = 20
# BatchMatMul accumulates in k order, the CPU EP's MLAS in blocks: float32 rounding differences
# that training carries forward (as tests/cann/test_training_on_cann.py).
LOSS_RTOL = 1e-5
PARAM_TOLERANCE = tolerance_of("float32")
# Adam's eps: see tests/training/test_training_attention.py (the key bias's zero gradient).
OPTIMIZERS = {"sgd": lambda: SGD(lr=0.05, momentum=0.9), "adam": lambda: Adam(lr=3e-3, eps=1e-4)}


def training_graph(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The fused fixture with its parameters (the initializers with a gradient) as graph inputs."""
    model = rewrite.fuse_training(onnx.load(FIXTURES / f"attention_{name}_fp32.onnx"))
    grads = {o.name[len("grad."):] for o in model.graph.output if o.name.startswith("grad.")}
    params = {}
    for init in [i for i in model.graph.initializer if i.name in grads]:
        params[init.name] = onnx.numpy_helper.to_array(init)
        model.graph.initializer.remove(init)
        model.graph.input.append(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    assert sorted(params) == sorted(grads)
    return model, params


def batches(model: onnx.ModelProto, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Two fixed random batches in turn, shaped like the graph's ``input`` and ``target``."""
    rng = np.random.default_rng(11)
    inputs = {i.name: i.type.tensor_type for i in model.graph.input}

    def make(name):
        shape = [d.dim_value for d in inputs[name].shape.dim]
        if inputs[name].elem_type == onnx.TensorProto.INT64:
            return rng.integers(0, N_CLASSES, shape).astype(np.int64)
        return rng.standard_normal(shape).astype(np.float32)

    pair = [(make("input"), make("target")) for _ in range(2)]
    return [pair[i % 2] for i in range(n)]


@pytest.mark.parametrize("name", SETUPS)
def test_loss_and_gradients_equal_the_cpu_ep(name, tmp_path):
    import onnxruntime as ort

    model, params = training_graph(name)
    x, y = batches(model, 1)[0]
    feeds = {"input": x, "target": y, **params}
    session = cann_ep.session(model, profile_prefix=str(tmp_path / "p"))
    names = [o.name for o in session.get_outputs()]
    got = dict(zip(names, ort_io.run(session, feeds)))
    cpu = ort.InferenceSession(model.SerializeToString(), ort_ops.register(ort.SessionOptions()),
                               providers=["CPUExecutionProvider"])
    want = dict(zip(names, ort_io.run(cpu, feeds)))
    for out in names:
        result = check(got[out], want[out])
        assert result.ok, f"{name} {out}: {result}"
    assert all(np.any(want[out] != 0) for out in names)
    # The attention MatMuls and the fused ELU backward run on the device; what the EP does not
    # claim yet (Softmax, LayerNormalization, ReduceMax, Expand, ... in onnxruntime-cann 1.24.4)
    # falls back to the CPU EP.
    on_cann = {r.op_type for r in cann_ep.node_runs(session) if r.provider == "CANNExecutionProvider"}
    assert {"MatMul", "EluGrad"} <= on_cann, sorted(on_cann)


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
@pytest.mark.parametrize("name", SETUPS)
def test_twenty_steps_on_cann_equal_the_cpu_ep(name, optimizer):
    model, params = training_graph(name)
    data = batches(model, STEPS)
    cpu = Trainer(model, params, OPTIMIZERS[optimizer](), session_factory=cpu_session_factory(), progress=False)
    cpu_losses = cpu.fit(data)
    cann = Trainer(model, params, OPTIMIZERS[optimizer](), session_factory=cann_ep.session, progress=False)
    cann_losses = cann.fit(data)
    np.testing.assert_allclose(cann_losses, cpu_losses, rtol=LOSS_RTOL)
    assert sum(cpu_losses[-2:]) < sum(cpu_losses[:2])  # it is training, not standing still
    got = cann.parameters()
    for pname, value in cpu.parameters().items():
        result = check(got[pname], value, PARAM_TOLERANCE)
        assert result.ok, f"{name} {optimizer} after {STEPS} steps, {pname}: {result}"
