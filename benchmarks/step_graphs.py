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


def build_setup(name: str, optimizer: str, mode: str, profile_prefix: str):
    """One training step of the users' setup ``name`` (models/user_setups.py, committed fixtures),
    fused by :func:`ort_ops.rewrite.fuse_training`: ``before`` without placement and with the
    optimizer update as an ONNX graph, ``after`` placed with the fused update ops. The optimizers
    of tests/cann/test_user_setups_on_cann.py."""
    from models import user_setup_fixtures

    fx = user_setup_fixtures.load(name)
    place = mode == "after"
    opt = SGD(lr=0.05, momentum=0.9) if optimizer == "sgd" else Adam(lr=1e-2, eps=fx.adam_eps)
    trainer = Trainer(rewrite.fuse_training(fx.graph), fx.params, opt, device="cann", progress=False,
                      session_factory=lambda m: cann_ep.session(m, place=place, profile_prefix=profile_prefix),
                      fused_update=place)
    batch_ = fx.batches[0]
    return (lambda: trainer.step(batch_)), trainer.step_graph, trainer.session


def build(kind: str, model: str, optimizer: str, mode: str, profile_prefix: str):
    """``(run one step, the graph given to the session, the session)``."""
    if kind == "setup":
        return build_setup(model, optimizer, mode, profile_prefix)
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

