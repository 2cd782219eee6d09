"""The configurations bench_cann_step.py measures: one training step or inference run of the
ELU MLP / CNN fixtures on the CANN EP, as the project built them before the whole-step work
(``before``) and now (``after``). Runs in the CANN environment (no PyTorch: committed fixtures)."""

from __future__ import annotations

import onnx

from models.fixture_graphs import batch, load, training_case
from ort_ops import cann_ep, rewrite
from ort_ops.training.trainer import SGD, Adam, Trainer

FIXTURES = {"mlp": "mlp_elu_fp32", "cnn": "cnn_elu_fp32"}


def _optimizer(name: str):
    return SGD(lr=0.05, momentum=0.9) if name == "sgd" else Adam(lr=1e-3)


def _fuse(graph: onnx.ModelProto, mode: str) -> onnx.ModelProto:
    return rewrite.fuse_training(graph) if mode == "after" else rewrite.fuse_elu_grad(graph)


def build(kind: str, model: str, optimizer: str, mode: str, profile_prefix: str):
    """``(run one step, the graph given to the session, the session)``."""
    place = mode == "after"

    def factory(m):
        return cann_ep.session(m, place=place, profile_prefix=profile_prefix)

    if kind == "infer":
        graph = load(FIXTURES[model] + "_infer")
        session = factory(graph)
        x, _ = batch(graph)
        return (lambda: session.run(None, {"input": x})), graph, session
    graph, params, (x, y) = training_case(FIXTURES[model])
    graph = _fuse(graph, mode)
    # before: the optimizer update as an ONNX graph, as before the fused update ops
    trainer = Trainer(graph, params, _optimizer(optimizer), session_factory=factory, device="cann", progress=False,
                      fused_update=place)
    return (lambda: trainer.step((x, y))), trainer.step_graph, trainer.session

