"""Training-mode ONNX Dropout placed on CANN (``ort_ops/csrc/placed/dropout.cc``: DropOutGenMask +
DropOutDoMask, + DropOutDoMask + Cast for the mask) on the ACL simulator. The expected values come
from NumPy: y == x * mask * scale with the mask read back (float32: scale = float32(1 / float32(1 -
ratio)); float16: y = half(x * half(1 / half(1 - ratio))), each product rounded once; bfloat16:
bf16(x * (1 / bf16(1 - ratio))) in float32), the kept
fraction within 6 binomial sigmas, and the identities of ONNX's spec. The random stream is the
simulator's, not the CPU EP's: masks are never compared with the CPU EP."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from acl_ctypes import BF16, sim_env
from ort_ops import ort_io
from ort_ops.domain import CANN_DOMAIN, IR_VERSION

cann_ep = pytest.importorskip("ort_ops.cann_ep")
pytestmark = pytest.mark.usefixtures("cann_simulator")

SHAPE = (64, 96)
ELEM = {np.float32: TP.FLOAT, np.float16: TP.FLOAT16, BF16: TP.BFLOAT16}


def dropout_model(dtype=np.float32, ratio=0.5, training=True, mask=True, seed=None, ratio_input=False,
                  training_input=False, opset=13, ratio_type=np.float32):
    """One Dropout node on x of SHAPE: ratio and training_mode constants (None: absent) or graph inputs."""
    inputs = [helper.make_tensor_value_info("x", ELEM[dtype], list(SHAPE))]
    inits, names = [], ["x"]
    if ratio_input:
        inputs.append(helper.make_tensor_value_info("ratio", helper.np_dtype_to_tensor_dtype(np.dtype(ratio_type)), []))
        names.append("ratio")
    elif ratio is not None:
        inits.append(numpy_helper.from_array(np.array(ratio, np.float32), "ratio"))
        names.append("ratio")
    else:
        names.append("")
    if training_input:
        inputs.append(helper.make_tensor_value_info("training", TP.BOOL, []))
        names.append("training")
    elif training is not None:
        inits.append(numpy_helper.from_array(np.array(training), "training"))
        names.append("training")
    while names and names[-1] == "":
        names.pop()
    outs = ["y", "mask"] if mask else ["y"]
    attrs = {} if seed is None else {"seed": seed}
    outputs = [helper.make_tensor_value_info("y", ELEM[dtype], list(SHAPE))]
    if mask:
        outputs.append(helper.make_tensor_value_info("mask", TP.BOOL, list(SHAPE)))
    graph = helper.make_graph([helper.make_node("Dropout", names, outs, name="drop", **attrs)], "dropout", inputs,
                              outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(IR_VERSION, 10)
    return model


def data(dtype=np.float32, seed=0):
    x = np.random.default_rng(seed).uniform(-4.0, 4.0, SHAPE).astype(dtype)
    x[x == 0] = 1  # a zero input would hide a dropped element in y
    return x


def expected(x, mask, ratio):
    """ONNX Dropout's output for a given mask, in CANN DropOutDoMask's rounding (see the module)."""
    if x.dtype == BF16:  # keep_prob in bfloat16, the product in float32, rounded once
        keep = np.float32(1.0 - np.float32(ratio)).astype(BF16).astype(np.float32)
        return np.where(mask, x.astype(np.float32) * (np.float32(1.0) / keep), np.float32(0)).astype(BF16)
    if x.dtype == np.float16:
        scale = np.float16(1.0) / np.float16(1.0 - np.float32(ratio))
        return np.where(mask, x * scale, np.float16(0))
    scale = np.float32(1.0) / np.float32(1.0 - np.float32(ratio))
    return np.where(mask, x * scale, np.float32(0))


def placed_session(model, **kw):
    session = cann_ep.session(model, **kw)
    nodes = [n for n in session.placement.nodes if n.op_type == "Dropout"]
    assert [n.where for n in nodes] == ["placed"], [n.line() for n in nodes]
    return session


def kept_within_six_sigma(mask, ratio):
    n = mask.size
    keep = 1.0 - ratio
    sigma = np.sqrt(n * keep * (1 - keep))
    return abs(mask.sum() - n * keep) <= 6 * sigma


@pytest.mark.parametrize("ratio", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=["float32", "float16", "bfloat16"])
def test_output_is_the_masked_scaled_input(dtype, ratio, tmp_path):
    session = placed_session(dropout_model(dtype, ratio), profile_prefix=str(tmp_path / "p"))
    x = data(dtype)
    y, mask = ort_io.run(session, {"x": x})  # (bfloat16 feeds need OrtValues)
    assert mask.dtype == np.bool_ and mask.shape == SHAPE and y.dtype == dtype
    np.testing.assert_array_equal(y.view(np.uint8), expected(x, mask, ratio).view(np.uint8))
    assert kept_within_six_sigma(mask, ratio), (mask.mean(), 1 - ratio)
    runs = cann_ep.node_runs(session)
    assert {r.provider for r in runs} == {"CANNExecutionProvider"}, [(r.op_type, r.provider) for r in runs]


def test_without_the_mask_output_only_y_and_two_launches():
    from session_runs import launched_by

    session = placed_session(dropout_model(mask=False))
    x = data()
    (y,), launched = launched_by(session, {"x": x})
    assert launched == {"DropOutGenMask": 1, "DropOutDoMask": 1}, launched
    kept = y != 0
    np.testing.assert_array_equal(y, expected(x, kept, 0.5))
    assert kept_within_six_sigma(kept, 0.5)
    _, with_mask = launched_by(placed_session(dropout_model(mask=True)), {"x": x})
    assert with_mask == {"DropOutGenMask": 1, "DropOutDoMask": 2, "Cast": 1}, with_mask


def test_an_unread_mask_is_unnamed_when_placed():
    """Exporters name Dropout's mask whether or not anything reads it: placement unnames an unread one,
    so the kernel takes the 2-launch route."""
    from session_runs import launched_by

    model = dropout_model(mask=True)
    del model.graph.output[1]  # the node still names "mask"; nothing reads it
    session = placed_session(model)
    node = next(n for n in session.placement.nodes if n.op_type == "Dropout")
    assert node.cann_ops == ("DropOutGenMask", "DropOutDoMask"), node.line()
    x = data()
    (y,), launched = launched_by(session, {"x": x})
    assert launched == {"DropOutGenMask": 1, "DropOutDoMask": 1}, launched
    np.testing.assert_array_equal(y, expected(x, y != 0, 0.5))


def test_two_runs_differ_and_a_seed_repeats_across_sessions():
    x = data()
    free = placed_session(dropout_model())
    first, second = (free.run(None, {"x": x})[1] for _ in range(2))
    assert not np.array_equal(first, second)
    seeded = [placed_session(dropout_model(seed=1234)) for _ in range(2)]
    masks = [[s.run(None, {"x": x})[1] for _ in range(3)] for s in seeded]
    for a, b in zip(*masks):
        np.testing.assert_array_equal(a, b)  # run k of each session: the same stream
    assert not np.array_equal(masks[0][0], masks[0][1])  # and a fresh one each run
    other = placed_session(dropout_model(seed=4321)).run(None, {"x": x})[1]
    assert not np.array_equal(other, masks[0][0])


@pytest.mark.parametrize("case", ["ratio-0", "training-false-input", "ratio-0-input"])
def test_identities_copy_the_input_and_keep_every_element(case):
    from session_runs import launched_by

    x = data()
    if case == "ratio-0":
        session, feeds = placed_session(dropout_model(ratio=0.0)), {"x": x}
    elif case == "ratio-0-input":
        session, feeds = placed_session(dropout_model(ratio_input=True)), {"x": x, "ratio": np.array(0.0, np.float32)}
    else:
        session, feeds = placed_session(dropout_model(training_input=True)), {"x": x, "training": np.array(False)}
    (y, mask), launched = launched_by(session, feeds)
    np.testing.assert_array_equal(y, x)
    assert mask.dtype == np.bool_ and mask.all()
    assert launched == {}, launched


@pytest.mark.parametrize("ratio_type", [np.float32, np.float16, np.float64])
def test_run_time_training_mode_and_ratio_are_read_on_the_host(ratio_type):
    session = placed_session(dropout_model(ratio_input=True, training_input=True, ratio_type=ratio_type))
    x = data()
    y, mask = session.run(None, {"x": x, "ratio": np.array(0.25, ratio_type), "training": np.array(True)})
    np.testing.assert_array_equal(y, expected(x, mask, 0.25))
    assert kept_within_six_sigma(mask, 0.25)
    y, mask = session.run(None, {"x": x, "ratio": np.array(0.25, ratio_type), "training": np.array(False)})
    np.testing.assert_array_equal(y, x)
    assert mask.all()


def test_default_ratio_is_one_half_at_opset_12():
    session = placed_session(dropout_model(ratio=None, training_input=True, opset=12))
    x = data()
    y, mask = session.run(None, {"x": x, "training": np.array(True)})
    np.testing.assert_array_equal(y, expected(x, mask, 0.5))
    assert kept_within_six_sigma(mask, 0.5)


@pytest.mark.parametrize("ratio", [1.0, -0.25, 1.5])
def test_a_ratio_outside_zero_one_is_refused_naming_the_node_and_value(ratio):
    session = placed_session(dropout_model(ratio_input=True))
    with pytest.raises(Exception) as info:
        session.run(None, {"x": data(), "ratio": np.array(ratio, np.float32)})
    message = str(info.value)
    assert "Dropout node 'drop'" in message and f"ratio is {ratio:f}" in message and "[0, 1)" in message, message


def test_a_constant_ratio_of_one_is_not_placed_and_the_session_says_why():
    with pytest.raises(Exception) as info:
        cann_ep.session(dropout_model(ratio=1.0))
    message = str(info.value)
    assert "ratio is 1.0, expected a value in [0, 1)" in message and "Dropout" in message, message


def test_inference_mode_is_left_to_the_ep_and_copies():
    session = cann_ep.session(dropout_model(training=False))
    node = next(n for n in session.placement.nodes if n.op_type == "Dropout")
    assert node.where == "cann_ep" and "inference-mode" in node.reason, node.line()
    x = data()
    y, mask = session.run(None, {"x": x})
    np.testing.assert_array_equal(y, x)
    assert mask.all()


def test_placed_node_is_in_the_cann_domain():
    session = placed_session(dropout_model())
    node = next(n for n in session.placement.nodes if n.op_type == "Dropout")
    assert node.placed_as == "Dropout" and node.cann_ops == ("DropOutGenMask", "DropOutDoMask", "Cast")
    assert CANN_DOMAIN == "ai.ortops.cann"


def test_bfloat16_is_refused_where_drop_out_do_mask_lacks_it():
    """CANN DropOutDoMask takes bfloat16 on Atlas A2/A3 and Ascend 950 only: on the Atlas training
    series (Ascend910A) the session fails at creation naming the node's op and the SoC."""
    child = textwrap.dedent("""
        from ort_ops import cann_ep
        from test_dropout_on_cann import dropout_model
        from acl_ctypes import BF16
        cann_ep.use_simulator()
        try:
            cann_ep.session(dropout_model(BF16))
            print("CREATED")
        except Exception as exc:
            print("REFUSED", exc)
    """)
    env = sim_env(ACLSIM_SOC_NAME="Ascend910A")
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300, env=env,
                          cwd=os.path.dirname(os.path.abspath(__file__)))
    assert "REFUSED" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "data is bfloat16" in proc.stdout and "Ascend910A" in proc.stdout, proc.stdout[-2000:]
