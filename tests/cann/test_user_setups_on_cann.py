"""Users' setups (models/user_setups.py, committed as tests/fixtures/user_setups) on the CANN EP:
fused with rewrite.fuse_training, trained with the Trainer on cann_ep.session (placement as
default) and on the CPU EP from the same start, SGD and Adam. Each step's loss agrees within
float32's tolerance (1e-6 + 1e-5 |loss|) and so do the parameters after the last step.

Where it runs: every node of each setup's step on CANN (issue 23: no node on the CPU EP), and
the placement report says so as ORT's profile does.
"""

from __future__ import annotations

import numpy as np
import pytest

from models import user_setup_fixtures
from ort_ops.tolerances import check
from ort_ops.training.trainer import SGD, Adam, Trainer, cpu_session_factory

cann_ep = pytest.importorskip("ort_ops.cann_ep")
rewrite = pytest.importorskip("ort_ops.rewrite")
pytestmark = pytest.mark.usefixtures("cann_simulator")

# Adam with the setup's eps (models/user_setups.py Setup.adam_eps: attention's key bias has an exact
# gradient of 0, and a small eps turns each EP's rounding noise there into full steps)
OPTIMIZERS = {"sgd": lambda fx: SGD(lr=0.05, momentum=0.9), "adam": lambda fx: Adam(lr=1e-2, eps=fx.adam_eps)}
SETUPS = user_setup_fixtures.names()
# setups whose graph cannot run on the CANN EP yet (Setup.cann_refused): placement refuses the
# session, naming the node and the EP kernel's defect, rather than letting the EP compute a wrong
# result (none at present: dilated_tcn, refused for its 1-D Convs until they were placed, trains)
REFUSED = user_setup_fixtures.cann_refused()


def test_the_corpus_is_committed():
    assert len(SETUPS) >= 8, f"tests/fixtures/user_setups holds {SETUPS}"


def test_the_1d_conv_setup_is_no_longer_refused():
    # its Conv / ConvTranspose nodes on 3-D input are placed (CANN Conv2D / Conv2DBackpropInput on (N, C, 1, L))
    assert "dilated_tcn" in SETUPS and "dilated_tcn" not in REFUSED


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("name", SETUPS)
def test_setup_trains_on_cann_as_on_the_cpu_ep(name, optimizer, tmp_path):
    fx = user_setup_fixtures.load(name)
    graph = rewrite.fuse_training(fx.graph)
    assert "EluGrad" in {n.op_type for n in graph.graph.node}, f"{name}: the ELU backward was not fused"
    count = [0]

    def factory(model):
        count[0] += 1
        return cann_ep.session(model, profile_prefix=str(tmp_path / f"p{count[0]}"))

    if name in REFUSED:
        with pytest.raises(rewrite.placement.PlacementError, match=REFUSED[name]):
            Trainer(graph, fx.params, OPTIMIZERS[optimizer](fx), session_factory=factory, device="cann")
        return
    cann = Trainer(graph, fx.params, OPTIMIZERS[optimizer](fx), session_factory=factory, device="cann", progress=False)
    cpu = Trainer(graph, fx.params, OPTIMIZERS[optimizer](fx), session_factory=cpu_session_factory(), progress=False)
    got, want = np.array(cann.fit(fx.batches)), np.array(cpu.fit(fx.batches))
    bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if abs(g - w) > 1e-6 + 1e-5 * abs(w)]
    assert not bad, f"{name}: steps whose CANN loss differs from the CPU EP's: {bad}"
    mine, ref = cann.parameters(), cpu.parameters()
    for p in ref:
        closeness = check(mine[p], ref[p])
        assert closeness.ok, f"{name}: {p} after {len(fx.batches)} steps: {closeness.message}"


@pytest.mark.parametrize("name", [s for s in SETUPS if s not in REFUSED])
def test_what_the_placement_report_says_is_what_runs(name, tmp_path):
    """One SGD step of each setup: the nodes ORT's profile shows on the CPU EP are the nodes the
    placement report puts there (none: the whole step runs on CANN), and no more: onnxruntime's optimizers that
    make nodes after placement (cann_ep.session.NODE_CREATING_OPTIMIZERS) are off, else MatMul + Add
    became a Gemm on the CPU in the unrolled GRUCell setup while the report said CANN."""
    import collections

    fx = user_setup_fixtures.load(name)
    sessions = []

    def factory(model):
        sessions.append(cann_ep.session(model, profile_prefix=str(tmp_path / f"p{len(sessions)}")))
        return sessions[-1]

    trainer = Trainer(rewrite.fuse_training(fx.graph), fx.params, OPTIMIZERS["sgd"](fx), session_factory=factory,
                      device="cann", progress=False)
    trainer.step(fx.batches[0])
    session = trainer.session
    runs = cann_ep.node_runs(session)
    reported = collections.Counter(n.op_type for n in session.placement.on_cpu)
    ran = collections.Counter(r.op_type for r in runs
                              if r.provider == "CPUExecutionProvider" and not r.op_type.startswith("Memcpy"))
    assert ran == reported, f"{name}: the profile's CPU node runs {dict(ran)}, the report's {dict(reported)}"
    assert not ran, f"{name}: nodes on the CPU EP: {[(n.op_type, n.reason) for n in session.placement.on_cpu]}"
    folded = {n.node for n in session.placement.nodes if n.where == "folded"}
    assert not folded & {r.node for r in runs}, f"{name}: reported folded, but in the profile"
