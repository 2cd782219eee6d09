"""One placed CANN session run from several threads: the whole training step (every fused op,
placed op and optimizer update of the ELU MLP and CNN, Adam and SGD) and the inference graphs.

Each run may get its own ACL stream; every kernel keeps its device scratch per stream
(cann/stream_scratch.h), valid until the queued ops that read it have executed. With the
simulator's stream delay (``ACLSIM_STREAM_DELAY_US``, read at aclInit: a fresh process) a
buffer released or reused too early is overwritten while queued work still reads it. Expected
results: the same session's own serial runs of the same inputs (runs are deterministic), so
any difference is a concurrency fault."""

from __future__ import annotations

import pytest
from threaded_runs import run_child_with_stream_delay

cann_ep = pytest.importorskip("ort_ops.cann_ep")

CHILD = r"""
import json, sys
import numpy as np
from ort_ops import cann_ep, rewrite
from threaded_runs import threads_against_serial
from models.fixture_graphs import batch, load, training_case
from ort_ops.training.trainer import SGD, Adam, Trainer, cpu_session_factory

cann_ep.use_simulator()
THREADS, ROUNDS, SEEDS = 4, 2, 6


def step_feeds(graph, params, optimizer, seed):
    # every input of the step graph: the batch, parameters and optimizer state drawn from `seed`
    rng = np.random.default_rng(seed)
    x, y = batch(graph, seed)
    feeds = {"input": x, "target": y}
    trainer = Trainer(graph, params, optimizer, session_factory=cpu_session_factory(), progress=False)
    scalar_states = optimizer.scalar_states(3)
    for i in trainer.step_graph.graph.input:
        if i.name in feeds:
            continue
        if i.name in scalar_states:
            feeds[i.name] = np.asarray(scalar_states[i.name])
        elif i.name in params:
            feeds[i.name] = (params[i.name] * (1 + 0.1 * rng.standard_normal(params[i.name].shape))).astype(np.float32)
        else:  # momentum buffers, exp_avg (signed), exp_avg_sq (>= 0)
            shape = params[i.name.split(".", 1)[1]].shape
            value = 0.01 * rng.standard_normal(shape)
            feeds[i.name] = (np.abs(value) if i.name.startswith("exp_avg_sq") else value).astype(np.float32)
    return trainer.step_graph, feeds


def check(model, feed_sets):
    session = cann_ep.session(model)
    result = threads_against_serial(session, feed_sets, THREADS, ROUNDS)
    return {**result, "on_cpu": [p.node for p in session.placement.on_cpu]}


result = {}
for fixture in ("mlp_elu_fp32", "cnn_elu_fp32"):
    graph, params, _ = training_case(fixture)
    graph = rewrite.fuse_training(graph)
    for name, make in (("sgd", lambda: SGD(lr=0.05, momentum=0.9)), ("adam", lambda: Adam(lr=1e-3))):
        built = [step_feeds(graph, params, make(), seed) for seed in range(SEEDS)]
        result[f"{fixture}/{name}"] = check(built[0][0], [f for _, f in built])
    infer = load(fixture + "_infer")
    result[f"{fixture}_infer"] = check(infer, [{"input": batch(infer, seed)[0]} for seed in range(SEEDS)])
print("RESULT=" + json.dumps(result))
"""


@pytest.fixture(scope="module")
def results():
    return run_child_with_stream_delay(CHILD)


CASES = [f"{m}/{o}" for m in ("mlp_elu_fp32", "cnn_elu_fp32") for o in ("sgd", "adam")] + [
    "mlp_elu_fp32_infer", "cnn_elu_fp32_infer"]


@pytest.mark.parametrize("case", CASES)
def test_one_placed_session_from_four_threads_is_exact(results, case):
    r = results[case]
    assert not r["errors"], r["errors"]
    assert not r["on_cpu"], r["on_cpu"]  # the whole graph on the device: every kernel is exercised
    assert r["distinct"] == 6, r  # the inputs differ, so a run given another run's data would show
    assert r["bad"] == 0, f"{r['bad']} of {r['runs']} concurrent runs differ from the serial runs"
