"""The simulator's ``Conv2D`` (ACL op sent by the CANN EP for ONNX Conv on 4-D input,
``onnxruntime/core/providers/cann/nn/conv.cc``).

Checked:
- bit for bit against a NumPy float32 reference that sums in the simulator's documented order
  (per output element: input channels of the group, then kernel rows, then kernel columns, each
  product and partial sum rounded to float32; bias added last; float16 rounds once at the end);
- within fp32 tolerance against ONNX Runtime's CPU Conv (same inputs, pads in ONNX order);
- CANN semantics: ``pads`` are [top, bottom, left, right], ``groups`` (and, when it is 1, the
  implicit groups = C_in / filter_C of CANN's shape inference), NCHW descriptors, an omitted
  bias given as an ``ACL_DT_UNDEFINED`` descriptor; errors for what is not simulated;
- through the real provider (child process): Conv nodes with and without bias, strided,
  dilated and grouped, run on CANNExecutionProvider, send ``Conv2D`` and equal the reference.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_FLOAT16,
    acl_dtype,
    run_child,
    sim_env,
)

pytestmark = pytest.mark.usefixtures("sim_dir")

ACL_FORMAT_NCHW, ACL_FORMAT_NHWC, ACL_FORMAT_ND = 0, 1, 2
ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_FORMAT_NOT_MATCH = 100023, 100027  # acl/acl_base.h
RTOL, ATOL = 1e-5, 1e-6  # fp32 row of ort_ops.training.verify.TOLERANCES (max|d| <= atol + rtol*max|want|)


# -- NumPy references ------------------------------------------------------------------------

def out_hw(x_shape, w_shape, strides, pads, dilations):
    """(OH, OW) with CANN pads [top, bottom, left, right]."""
    (_, _, h, w), (_, _, kh, kw) = x_shape, w_shape
    (sh, sw), (dh, dw), (t, b, l, r) = strides, dilations, pads
    return (h + t + b - (dh * (kh - 1) + 1)) // sh + 1, (w + l + r - (dw * (kw - 1) + 1)) // sw + 1


def conv_ref(x, w, bias=None, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), groups=1, acc=np.float32):
    """Conv2D in the simulator's order: float32 (``acc``), acc over (channel, kh, kw) in
    increasing order, every product and partial sum rounded to float32, then + bias; cast to
    x's dtype once."""
    xf, wf = x.astype(acc), w.astype(acc)
    n, c, _, _ = x.shape
    m, kc, kh, kw = w.shape
    (sh, sw), (dh, dw), (t, b, l, r) = strides, dilations, pads
    oh, ow = out_hw(x.shape, w.shape, strides, pads, dilations)
    xp = np.pad(xf, ((0, 0), (0, 0), (t, b), (l, r)))
    mpg = m // groups
    out = np.zeros((n, m, oh, ow), acc)
    for g in range(groups):
        ms = slice(g * mpg, (g + 1) * mpg)
        for ci in range(kc):
            for ky in range(kh):
                for kx in range(kw):
                    patch = xp[:, g * kc + ci, ky * dh:ky * dh + sh * (oh - 1) + 1:sh,
                               kx * dw:kx * dw + sw * (ow - 1) + 1:sw]  # [n, oh, ow]
                    prod = patch[:, None] * wf[ms, ci, ky, kx][None, :, None, None]  # float32, rounded
                    out[:, ms] = out[:, ms] + prod
    if bias is not None:
        out = out + bias.astype(acc)[None, :, None, None]
    return out.astype(x.dtype)


def onnx_pads(pads):
    """CANN [top, bottom, left, right] -> ONNX [top, left, bottom, right]."""
    t, b, l, r = pads
    return [t, l, b, r]


def ort_cpu_conv(x, w, bias, strides, pads, dilations, groups):
    import onnxruntime as ort
    from onnx import TensorProto, helper

    names = ["x", "w"] + (["b"] if bias is not None else [])
    node = helper.make_node("Conv", names, ["y"], strides=list(strides), pads=onnx_pads(pads),
                            dilations=list(dilations), group=groups)
    inputs = [helper.make_tensor_value_info(nm, TensorProto.FLOAT, list(a.shape))
              for nm, a in zip(names, [x, w, bias])]
    graph = helper.make_graph([node], "conv", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=9)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, dict(zip(names, [x, w, bias])))[0]


def bits_equal(a, b) -> bool:
    view = {2: np.uint16, 4: np.uint32}[a.dtype.itemsize]
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.view(view), b.view(view))


# -- running Conv2D directly (ctypes, child process) ------------------------------------------

CHILD = r"""
from pathlib import Path
d = Path(DIR)
data = np.load(d / "in.npz")
spec = json.loads((d / "spec.json").read_text())
lib = acl.lib
lib.aclopSetAttrString.restype = ctypes.c_int32
lib.aclopSetAttrString.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
vp = ctypes.c_void_p
acl.init()
def desc(dt, dims, fmt):
    arr = (ctypes.c_int64 * max(len(dims), 1))(*dims)
    return lib.aclCreateTensorDesc(dt, len(dims), arr if dims else None, fmt)
out, result = {}, []
for ci, case in enumerate(spec):
    attr = lib.aclopCreateAttr()
    for k, v in case["attrs"].items():
        if isinstance(v, bool):
            lib.aclopSetAttrBool(attr, k.encode(), int(v))
        elif isinstance(v, int):
            lib.aclopSetAttrInt(attr, k.encode(), v)
        elif isinstance(v, str):
            lib.aclopSetAttrString(attr, k.encode(), v.encode())
        else:
            lib.aclopSetAttrListInt(attr, k.encode(), len(v), (ctypes.c_int64 * len(v))(*v))
    descs, bufs, ptrs = [], [], []
    for key, fmt in case["inputs"]:
        if key is None:  # omitted optional input, as the EP passes it
            descs.append(lib.aclCreateTensorDesc(-1, 0, None, -1))
            bufs.append(lib.aclCreateDataBuffer(None, 0))
            continue
        a = data[key]
        p = acl.to_device(a)
        ptrs.append(p)
        descs.append(desc(acl_dtype(a.dtype), list(a.shape), fmt))
        bufs.append(lib.aclCreateDataBuffer(p, a.nbytes))
    odt, odims, ofmt = case["output"]
    nbytes = int(np.prod(odims)) * np.dtype(numpy_dtype(odt)).itemsize
    py = acl.malloc(nbytes)
    odesc, obuf = desc(odt, odims, ofmt), lib.aclCreateDataBuffer(py, nbytes)
    arr = lambda xs: (vp * len(xs))(*xs)
    rc = acl.op_lib.aclopCompileAndExecute(b"Conv2D", len(descs), arr(descs), arr(bufs), 1, arr([odesc]),
                                           arr([obuf]), attr, 0, 0, None, None)
    msg = acl.err()
    if rc == 0:
        assert lib.aclrtSynchronizeStream(None) == 0, acl.err()
        out[f"y{ci}"] = acl.from_device(py, odims, numpy_dtype(odt))
    result.append([rc, msg])
    for h in descs + [odesc]:
        lib.aclDestroyTensorDesc(h)
    for h in bufs + [obuf]:
        lib.aclDestroyDataBuffer(h)
    lib.aclopDestroyAttr(attr)
    for p in ptrs + [py]:
        assert lib.aclrtFree(p) == 0, acl.err()
np.savez(d / "out.npz", **out)
assert lib.aclFinalize() == 0, acl.err()
"""


def run_conv2d(tmp_path, cases):
    """cases: dicts with x, w, bias (array, None = omitted input, "none" = 2 inputs), attrs,
    out (dims), optional fmt (x/w/y format) and out_dtype. Returns [(rc, msg, y or None)]."""
    arrays, spec = {}, []
    for i, case in enumerate(cases):
        fmt = case.get("fmt", ACL_FORMAT_NCHW)
        arrays[f"x{i}"], arrays[f"w{i}"] = case["x"], case["w"]
        inputs = [[f"x{i}", fmt], [f"w{i}", fmt]]
        bias = case.get("bias")
        if isinstance(bias, np.ndarray):
            arrays[f"b{i}"] = bias
            inputs.append([f"b{i}", ACL_FORMAT_ND])
        elif bias is None:
            inputs.append([None, -1])
        spec.append({"inputs": inputs, "attrs": case["attrs"],
                     "output": [case.get("out_dtype", acl_dtype(case["x"].dtype)), list(case["out"]), fmt]})
    np.savez(tmp_path / "in.npz", **arrays)
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    result, _ = run_child(f"DIR = {str(tmp_path)!r}\n" + CHILD)
    ys = np.load(tmp_path / "out.npz")
    return [(rc, msg, ys[f"y{i}"] if f"y{i}" in ys else None) for i, (rc, msg) in enumerate(result)]


def ep_attrs(strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1):
    """The attributes exactly as nn/conv.cc sets them (``pads`` is the ONNX list, unchanged)."""
    return {"strides": [1, 1, *strides], "pads": list(pads), "dilations": [1, 1, *dilations], "group": group,
            "auto_pad": "NOTSET", "dim_size": 4, "trans_2d": True}


def rand(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# Shapes: the CNN's forward convs, its two weight-gradient convs (no bias, long reductions),
# strided, dilated, asymmetric pads (CANN order), grouped (explicit and implicit groups).
CASES = {
    "cnn_conv1": dict(x=(32, 1, 8, 8), w=(8, 1, 3, 3), bias=True, pads=(1, 1, 1, 1)),
    "cnn_conv2": dict(x=(32, 8, 4, 4), w=(16, 8, 3, 3), bias=True, pads=(1, 1, 1, 1)),
    "cnn_grad_conv1": dict(x=(1, 32, 8, 8), w=(8, 32, 8, 8), bias=False, pads=(1, 1, 1, 1)),
    "cnn_grad_conv2": dict(x=(8, 32, 4, 4), w=(16, 32, 4, 4), bias=False, pads=(1, 1, 1, 1)),
    "strided_dilated": dict(x=(2, 3, 11, 9), w=(4, 3, 3, 2), bias=True, strides=(2, 3), dilations=(2, 1),
                            pads=(1, 0, 2, 1)),
    "asymmetric_pads": dict(x=(2, 2, 5, 6), w=(3, 2, 2, 3), bias=True, pads=(0, 2, 1, 0)),
    "groups": dict(x=(2, 6, 5, 5), w=(4, 3, 3, 3), bias=True, pads=(1, 1, 1, 1), groups=2, attr="groups"),
    "implicit_groups": dict(x=(2, 6, 5, 5), w=(6, 2, 3, 3), bias=False, pads=(1, 1, 1, 1), groups=3, attr="group"),
}


def make_case(rng, spec, dtype=np.float32):
    x, w = rand(rng, *spec["x"], dtype=dtype), rand(rng, *spec["w"], dtype=dtype)
    bias = rand(rng, spec["w"][0], dtype=dtype) if spec["bias"] else None
    strides, dilations = spec.get("strides", (1, 1)), spec.get("dilations", (1, 1))
    pads, groups = spec["pads"], spec.get("groups", 1)
    attrs = {"strides": [1, 1, *strides], "pads": list(pads), "dilations": [1, 1, *dilations],
             "data_format": "NCHW"}
    if spec.get("attr") == "group":  # only ONNX's name, as the EP sets it: CANN infers groups
        attrs["group"] = groups
    else:
        attrs["groups"] = groups
    ref = conv_ref(x, w, bias, strides, pads, dilations, groups)
    case = dict(x=x, w=w, bias=bias, attrs=attrs, out=ref.shape)
    return case, ref, (strides, pads, dilations, groups)


def test_conv2d_fp32_is_bit_exact_against_the_ordered_reference_and_close_to_ort_cpu(tmp_path):
    rng = np.random.default_rng(7)
    built = {name: make_case(rng, spec) for name, spec in CASES.items()}
    results = run_conv2d(tmp_path, [case for case, _, _ in built.values()])
    for (name, (case, ref, (strides, pads, dilations, groups))), (rc, msg, y) in zip(built.items(), results):
        assert rc == 0, (name, msg)
        assert bits_equal(y, ref), (name, np.max(np.abs(y - ref)))
        want = ort_cpu_conv(case["x"], case["w"], case["bias"], strides, pads, dilations, groups)
        assert y.shape == want.shape, name
        assert np.max(np.abs(y - want)) <= ATOL + RTOL * np.max(np.abs(want)), name
    # the order is observable: a float64 sum rounded once differs in the last bits somewhere
    case, ref, _ = built["cnn_grad_conv1"]
    exact = conv_ref(case["x"], case["w"], None, pads=(1, 1, 1, 1), acc=np.float64)
    assert not np.array_equal(ref, exact.astype(np.float32))


def test_conv2d_fp16_accumulates_in_fp32_and_rounds_once(tmp_path):
    rng = np.random.default_rng(3)
    cases, refs = [], []
    for name in ("cnn_conv2", "strided_dilated", "cnn_grad_conv2"):
        case, ref, _ = make_case(rng, CASES[name], dtype=np.float16)
        cases.append(case)
        refs.append(ref)
    for (rc, msg, y), ref in zip(run_conv2d(tmp_path, cases), refs):
        assert rc == 0, msg
        assert bits_equal(y, ref)


def test_conv2d_bias_input_forms(tmp_path):
    """Bias present, omitted as an ACL_DT_UNDEFINED descriptor (what the EP sends), or not passed."""
    rng = np.random.default_rng(5)
    x, w, b = rand(rng, 2, 3, 4, 4), rand(rng, 5, 3, 3, 3), rand(rng, 5)
    attrs = ep_attrs(pads=(1, 1, 1, 1))
    results = run_conv2d(tmp_path, [dict(x=x, w=w, bias=b, attrs=attrs, out=(2, 5, 4, 4)),
                                    dict(x=x, w=w, bias=None, attrs=attrs, out=(2, 5, 4, 4)),
                                    dict(x=x, w=w, bias="none", attrs=attrs, out=(2, 5, 4, 4))])
    assert [r[0] for r in results] == [0, 0, 0]
    assert bits_equal(results[0][2], conv_ref(x, w, b, pads=(1, 1, 1, 1)))
    assert bits_equal(results[1][2], conv_ref(x, w, None, pads=(1, 1, 1, 1)))
    assert bits_equal(results[2][2], results[1][2])


def test_conv2d_rejects_what_it_does_not_simulate(tmp_path):
    rng = np.random.default_rng(9)
    x, w, b = rand(rng, 1, 2, 5, 5), rand(rng, 3, 2, 3, 3), rand(rng, 3)
    ok = ep_attrs(pads=(1, 1, 1, 1))
    cases = [
        dict(x=x, w=w, bias=b, attrs=ok, out=(1, 3, 5, 5), fmt=ACL_FORMAT_ND),                       # ND descs
        dict(x=x, w=w, bias=b, attrs={**ok, "data_format": "NHWC"}, out=(1, 3, 5, 5)),                # layout attr
        dict(x=x, w=w, bias=b, attrs={k: v for k, v in ok.items() if k != "pads"}, out=(1, 3, 5, 5)),  # no pads
        dict(x=x, w=w, bias=b, attrs={**ok, "strides": [2, 2]}, out=(1, 3, 5, 5)),                    # 2 strides
        dict(x=x, w=w, bias=rand(rng, 4), attrs=ok, out=(1, 3, 5, 5)),                                # bias shape
        dict(x=x, w=rand(rng, 3, 4, 3, 3), bias=b, attrs=ok, out=(1, 3, 5, 5)),                       # channels
        # ONNX pads [top=1, left=0, bottom=2, right=1] read as CANN's [top, bottom, left, right]:
        # the provider's output shape (ONNX order) no longer fits
        dict(x=x, w=w, bias=b, attrs=ep_attrs(pads=(1, 0, 2, 1)), out=(1, 3, 6, 4)),
        dict(x=x, w=w, bias=b, attrs=ok, out=(1, 3, 5, 5), out_dtype=ACL_FLOAT16),                    # y dtype
    ]
    results = run_conv2d(tmp_path, cases)
    codes = [rc for rc, _, _ in results]
    assert codes == [ACL_ERROR_FORMAT_NOT_MATCH, ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_ATTR_NOT_MATCH,
                     ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                     ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH], [r[1] for r in results]
    assert "NCHW only" in results[0][1]
    assert "[top, bottom, left, right]" in results[6][1]
    assert all("Conv2D:" in msg for _, msg, _ in results), [m for _, m, _ in results]


# -- through the real provider ---------------------------------------------------------------

EP_CHILD = r"""
import json, os, sys
import numpy as np
import ort_ops.cann_ep.sim as sim
sim.load()
import onnxruntime as ort
from onnx import TensorProto, helper
spec = json.loads(sys.argv[1])
d = spec["dir"]
data = np.load(os.path.join(d, "in.npz"))
nodes, inputs, outputs, feeds = [], [], [], {}
for i, c in enumerate(spec["convs"]):
    names = [f"x{i}", f"w{i}"] + ([f"b{i}"] if f"b{i}" in data else [])
    for nm in names:
        feeds[nm] = data[nm]
        inputs.append(helper.make_tensor_value_info(nm, TensorProto.FLOAT, list(data[nm].shape)))
    nodes.append(helper.make_node("Conv", names, [f"y{i}"], name=f"conv{i}", **c))
    outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None))
model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs),
                          opset_imports=[helper.make_opsetid("", 13)], ir_version=9)
so = ort.SessionOptions()
so.enable_profiling = True
so.profile_file_prefix = os.path.join(d, "prof")
sess = ort.InferenceSession(model.SerializeToString(), so, providers=[
    ("CANNExecutionProvider", {"enable_cann_graph": "0"}), "CPUExecutionProvider"])
before = sim.op_counts()
try:
    ys = sess.run(None, feeds)
    np.savez(os.path.join(d, "out.npz"), **{f"y{i}": y for i, y in enumerate(ys)})
    error = None
except Exception as e:
    error = str(e)
sent = {k: v - before.get(k, 0) for k, v in sim.op_counts().items() if v != before.get(k, 0)}
prof = json.load(open(sess.end_profiling()))
placed = {e["name"].rsplit("_kernel_time", 1)[0]: e["args"]["provider"] for e in prof
          if e.get("cat") == "Node" and "provider" in e.get("args", {})}
print("@@RESULT@@" + json.dumps({"error": error, "sent": sent, "placed": placed}))
"""


def run_ep(tmp_path, convs):
    """convs: list of (x, w, bias or None, ONNX Conv attrs). Returns (result dict, outputs)."""
    arrays = {}
    for i, (x, w, b, _) in enumerate(convs):
        arrays[f"x{i}"], arrays[f"w{i}"] = x, w
        if b is not None:
            arrays[f"b{i}"] = b
    np.savez(tmp_path / "in.npz", **arrays)
    arg = json.dumps({"dir": str(tmp_path), "convs": [c for *_, c in convs]})
    proc = subprocess.run([sys.executable, "-c", EP_CHILD, arg], capture_output=True, text=True, timeout=300,
                          env=sim_env(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT@@")][-1]
    result = json.loads(line[len("@@RESULT@@"):])
    out = np.load(tmp_path / "out.npz") if os.path.exists(tmp_path / "out.npz") else {}
    return result, [out[f"y{i}"] for i in range(len(convs))] if result["error"] is None else None


@pytest.fixture(scope="module")
def cann_wheel():
    import onnxruntime as ort

    if "CANNExecutionProvider" not in ort.get_available_providers():
        pytest.skip(f"onnxruntime {ort.__version__} here has no CANNExecutionProvider (use .venv-cann)")


@pytest.mark.usefixtures("cann_wheel")
def test_conv_nodes_run_on_the_cann_ep_as_conv2d(tmp_path):
    rng = np.random.default_rng(21)
    convs = [  # (x, w, bias, ONNX attrs); pads in ONNX order with left == bottom (see below)
        (rand(rng, 4, 1, 8, 8), rand(rng, 8, 1, 3, 3), rand(rng, 8), dict(pads=[1, 1, 1, 1])),
        (rand(rng, 1, 32, 8, 8), rand(rng, 8, 32, 8, 8), None, dict(pads=[1, 1, 1, 1])),
        (rand(rng, 2, 3, 11, 9), rand(rng, 4, 3, 3, 2), rand(rng, 4),
         dict(strides=[2, 3], dilations=[2, 1], pads=[1, 0, 0, 2])),
        (rand(rng, 2, 6, 5, 5), rand(rng, 4, 3, 3, 3), rand(rng, 4), dict(group=2, pads=[1, 1, 1, 1])),
    ]
    result, ys = run_ep(tmp_path, convs)
    assert result["error"] is None, result["error"]
    assert result["sent"] == {"Conv2D": 4}
    assert {result["placed"][f"conv{i}"] for i in range(4)} == {"CANNExecutionProvider"}
    for (x, w, b, attrs), y in zip(convs, ys):
        t, l, bo, r = attrs["pads"]
        args = (attrs.get("strides", (1, 1)), (t, bo, l, r), attrs.get("dilations", (1, 1)), attrs.get("group", 1))
        assert bits_equal(y, conv_ref(x, w, b, *args))
        want = ort_cpu_conv(x, w, b, *args)
        assert np.max(np.abs(y - want)) <= ATOL + RTOL * np.max(np.abs(want))


@pytest.mark.usefixtures("cann_wheel")
def test_ep_pads_in_onnx_order_fail_when_left_differs_from_bottom(tmp_path):
    """nn/conv.cc passes ONNX's [top, left, bottom, right] as Conv2D's [top, bottom, left,
    right]. They agree when left == bottom; otherwise the per-axis sums differ, so the output
    shape the provider allocated does not fit and the op fails (it is never silently wrong)."""
    rng = np.random.default_rng(2)
    result, _ = run_ep(tmp_path, [(rand(rng, 1, 2, 5, 5), rand(rng, 3, 2, 3, 3), None,
                                   dict(pads=[1, 0, 2, 1]))])
    assert result["error"] is not None and "Conv" in result["error"]
