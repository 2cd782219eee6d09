"""fuse_training (the ELU backward, the cross-entropy and the max-pool backward) on a corpus of real
exported training graphs (tests/rewrite/real_graphs.py).

The expectation of every setup comes from PyTorch, not from the rewrite: the number (and the
alphas) of ``aten.elu_backward`` calls that ``loss.backward()`` runs with ``scale ==
input_scale == 1`` (:func:`real_graphs.expected_elu_backward`), and the plain cross-entropy and
max-pool backwards it runs (:func:`real_graphs.expected_fusions`). For each setup:

(a) the fused graph has exactly that many ``ai.ortops::EluGrad`` nodes, with the same
    multiset of float32 alphas (CELU(alpha=1): fusing is optional, 0 nodes are accepted);
(b) it passes ``onnx.checker`` (full check) and loads in ORT with the op library;
(c) its loss and gradients in ORT equal eager autograd and the unfused graph's ORT results
    within the dtype's tolerance (the Dropout setup: both graphs' Dropout nodes get the same
    ``seed``, and eager runs with the mask ORT drew);
(d) negative controls (SELU, CELU(0.5)) get no EluGrad and still match eager;
(e) the fused graph has one SoftmaxCrossEntropyLossAndGrad per plain cross-entropy (with its
    reduction and ignore_index) and one MaxPoolGrad per max-pool backward (with its window);
(f) nothing else changed: every node that is not a fused op (or its Reshape) is an original node,
    unchanged (the forward MaxPools of fused sites lose their Indices output, nothing more), and
    every original node that is gone is a node of a fused site.

The exports are cached per process (each setup is exported once per test run).
"""

from __future__ import annotations

import copy
import functools
import pathlib
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import onnx
import onnx.reference
import onnxruntime as ort
import pytest
import torch
from torch import nn

import ort_ops
import real_graphs as rg
from checks import assert_same_model, graphsurgeon_exported
from ort_ops import DOMAIN, ort_io, rewrite, training
from ort_ops.reference import OPS
from ort_ops.tolerances import TOLERANCES  # dtype name -> Tolerance(rtol, atol)
from ort_ops.training.verify import compare_all, eager_loss_and_grads, feeds_for, to_numpy

NAMES = list(rg.SETUPS)
# every setup exported twice: with the exporter's optimiser (the default) and without it (issue 19
# item 18: the unoptimised export spells ELU Mul(Elu(Mul(x, CastLike(1))), CastLike(1)))
UNOPTIMIZED = "/optimize=False"
CASES = NAMES + [n + UNOPTIMIZED for n in NAMES]
NEGATIVE = [n for n in CASES if rg.SETUPS[n.removesuffix(UNOPTIMIZED)].negative]
DROPOUT_SEED = 1234
_ROOT = pathlib.Path(__file__).resolve().parents[2]


# --- exporting (cached) -----------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def _reuse_torchlib_listing():
    """Speed only: torch's exporter re-lists onnxscript's torchlib (about 0.7 s) on every export;
    the listing is a pure function of the installed onnxscript, so list it once for this module
    (the exported bytes are identical). Left alone if the internal has moved."""
    try:
        from torch.onnx._internal.exporter import _registration
        apis = _registration.onnxscript_apis
        original = apis.get_torchlib_ops
    except (ImportError, AttributeError):
        yield
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(apis, "get_torchlib_ops", functools.cache(original))
        yield



def _export(module, inputs, loss_fn, targets, optimize: bool, random: bool = False) -> onnx.ModelProto:
    # random setups keep the exporter's random ONNX Dropout (dropout_masks=False): the graphs these
    # tests rewrite are the random form (the mask-input form is tests/training's)
    return training.export_training_graph(module, inputs, loss_fn, targets=targets, params_as_inputs=True,
                                          verify=False, optimize=optimize, dropout_masks=not random)


@dataclass
class Case:
    setup: rg.Setup
    module: nn.Module
    inputs: tuple
    loss_fn: object
    targets: tuple
    calls: list[dict]  # every aten.elu_backward PyTorch ran
    subgraphs: dict  # the cross-entropy and max-pool backwards PyTorch ran (real_graphs.expected_fusions)
    unfused: onnx.ModelProto | None = None
    fused: onnx.ModelProto | None = None
    report: rewrite.RewriteReport = field(default_factory=rewrite.RewriteReport)
    export_error: str | None = None

    @property
    def expected(self) -> list[dict]:
        return rg.fusable(self.calls)

    @property
    def dtype_name(self) -> str:
        return str(self.setup.dtype).removeprefix("torch.")


@functools.cache
def _case(name: str) -> Case:
    """The setup ``name`` (``<setup>`` or ``<setup>/optimize=False``), exported and fused."""
    s = rg.SETUPS[name.removesuffix(UNOPTIMIZED)]
    module, inputs, loss_fn, targets = s.build()
    case = Case(s, module, tuple(inputs), loss_fn, tuple(targets), rg.expected_elu_backward(s),
                rg.expected_fusions(s))
    try:
        case.unfused = _export(module, case.inputs, loss_fn, case.targets, not name.endswith(UNOPTIMIZED),
                               random=case.setup.random)
    except Exception as e:
        case.export_error = f"{type(e).__name__}: {e}"
        return case
    case.fused = rewrite.fuse_training(case.unfused, report=case.report)
    return case


def get_case(name: str) -> Case:
    case = _case(name)
    if case.export_error is not None:
        if case.setup.dtype == torch.bfloat16:
            pytest.skip(f"bfloat16 training graph does not export: {case.export_error}")
        pytest.fail(f"export failed: {case.export_error}")
    return case


# --- running ----------------------------------------------------------------------------------


def elu_grads(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    return nodes_of(model, "EluGrad")


def nodes_of(model: onnx.ModelProto, op: str) -> list[onnx.NodeProto]:
    return [n for n in model.graph.node if n.op_type == op and n.domain == DOMAIN]


def fused_sites(case: Case, op: str) -> list:
    return [s for s in case.report.fused if s.op == op]


def alpha_of(node: onnx.NodeProto) -> np.float32:
    for a in node.attribute:
        if a.name == "alpha":
            return np.float32(a.f)
    return np.float32(1.0)  # the schema's default


def seeded(model: onnx.ModelProto, seed: int = DROPOUT_SEED) -> onnx.ModelProto:
    """A copy whose Dropout nodes all have ``seed`` and whose Dropout masks are graph outputs."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for node in out.graph.node:
        if node.op_type == "Dropout":
            for a in [a for a in node.attribute if a.name == "seed"]:
                node.attribute.remove(a)
            node.attribute.append(onnx.helper.make_attribute("seed", seed))
            if len(node.output) > 1 and node.output[1]:
                out.graph.output.append(onnx.helper.make_tensor_value_info(
                    node.output[1], onnx.TensorProto.BOOL, None))
    return out


def session(model: onnx.ModelProto) -> ort.InferenceSession:
    so = ort_ops.register(ort.SessionOptions())
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def ort_unavailable(case: Case) -> str | None:
    """Why the *unfused* graph cannot run in ORT at all (then no graph of this setup can)."""
    try:
        session(case.unfused)
    except Exception as e:
        return f"ORT cannot load even the unfused graph: {str(e).splitlines()[0][:300]}"
    return None


def run(case: Case, model: onnx.ModelProto, engine: str = "ort") -> dict[str, np.ndarray]:
    """``{output name: array}`` of ``model`` on the case's inputs and parameters."""
    feeds = feeds_for(model, case.module, case.inputs, case.targets)
    names = [o.name for o in model.graph.output]
    if engine == "ort":
        return dict(zip(names, ort_io.run(session(model), feeds, names)))
    outputs = onnx.reference.ReferenceEvaluator(model, new_ops=list(OPS)).run(None, feeds)
    return dict(zip(names, outputs))


class _MaskDropout(nn.Module):
    """Dropout with a given keep-mask (the one ORT drew), scaled by ``1 / (1 - p)`` like nn.Dropout."""

    def __init__(self, mask: np.ndarray, p: float):
        super().__init__()
        self.mask, self.p = torch.from_numpy(mask), p

    def forward(self, x):
        return x * self.mask.to(x.dtype) * (1.0 / (1.0 - self.p))


def eager(case: Case, masks: list[np.ndarray] | None = None) -> dict[str, np.ndarray]:
    module = case.module
    if masks is not None:
        module = copy.deepcopy(module)
        drops = [(n, m) for n, m in module.named_modules() if isinstance(m, nn.Dropout)]
        assert len(drops) == len(masks) == 1, "mask replay is implemented for one Dropout"
        ((name, drop),), (mask,) = drops, masks
        parent = module.get_submodule(name.rpartition(".")[0]) if "." in name else module
        setattr(parent, name.rpartition(".")[2], _MaskDropout(mask, drop.p))
    want = eager_loss_and_grads(module, case.inputs, case.loss_fn, case.targets)
    return {k: to_numpy(v) for k, v in want.items()}


def assert_close(got: dict, want: dict, dtype_name: str, what: str):
    rtol, atol = TOLERANCES[dtype_name].rtol, TOLERANCES[dtype_name].atol
    report = compare_all(got, want, rtol, atol)
    assert report.ok, f"{what} ({dtype_name}: rtol {rtol}, atol {atol}):\n{report}"


def summary(case: Case) -> str:
    return case.report.summary()


@functools.cache
def _results(name: str) -> dict:
    """ORT (or reference-evaluator) results of both graphs plus eager, shared by the (c) tests."""
    case = _case(name)
    engine = "ort"
    why = ort_unavailable(case)
    if why is not None:
        engine = "reference"  # e.g. bfloat16: ONNX Elu-18 has no bfloat16, ORT refuses the graph
    grads = [o.name for o in case.unfused.graph.output]
    unfused, fused = case.unfused, case.fused
    masks = None
    if case.setup.random:
        unfused, fused = seeded(unfused), seeded(fused)
    got_u, got_f = run(case, unfused, engine), run(case, fused, engine)
    if case.setup.random:
        mask_names = [o.name for o in unfused.graph.output[len(grads):]]
        masks = [got_u[n] for n in mask_names]
        for n in mask_names:
            np.testing.assert_array_equal(got_f[n], got_u[n], err_msg="seeded Dropout masks differ")
    return {
        "engine": engine, "why": why,
        "unfused": {k: got_u[k] for k in grads}, "fused": {k: got_f[k] for k in grads},
        "eager": eager(case, masks),
    }


# --- the independent expectation ----------------------------------------------------------------


def test_corpus_covers_the_brief():
    assert len(rg.SETUPS) >= 12
    dtypes = {s.dtype for s in rg.SETUPS.values()}
    assert {torch.float32, torch.float16, torch.bfloat16} <= dtypes
    assert {"selu", "celu_half", "celu_one"} <= set(rg.SETUPS)


@pytest.mark.parametrize("name", NAMES)
def test_pytorch_runs_elu_backward(name):
    """The recorder sees PyTorch's backward: every setup runs >= 1 elu_backward; the negative
    controls run only non-ELU ones (scale or input_scale != 1)."""
    calls = rg.expected_elu_backward(name)
    assert calls, "no aten.elu_backward recorded"
    if rg.SETUPS[name].negative:
        assert not rg.fusable(calls), calls
    else:
        assert rg.fusable(calls) == calls, calls


def test_pytorch_skips_the_backward_of_an_elu_before_frozen_layers():
    alphas = sorted(np.float32(c["alpha"]) for c in rg.expected_elu_backward("frozen_layers"))
    assert alphas == [np.float32(0.6), np.float32(1.5)]  # not ELU(0.3): nothing upstream learns


# --- (a) count and alphas -----------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_a_elu_grad_count_and_alphas(name):
    case = get_case(name)
    nodes = elu_grads(case.fused)
    got = Counter(alpha_of(n) for n in nodes)
    want = Counter(np.float32(c["alpha"]) for c in case.expected)
    if case.setup.fusion_optional and not nodes:
        return  # not fusing is allowed here
    assert len(nodes) == len(case.expected), (
        f"{len(nodes)} EluGrad, PyTorch ran {len(case.expected)} fusable elu_backward(s) "
        f"(scale == input_scale == 1; alphas {sorted(map(float, want.elements()))})\n{summary(case)}")
    assert got == want, f"alphas {sorted(got.elements())} != PyTorch's {sorted(want.elements())}"
    assert len(fused_sites(case, "EluGrad")) == len(nodes), summary(case)


# --- (b) checker and ORT load -----------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_b_checker_full(name):
    case = get_case(name)
    invalid = (onnx.checker.ValidationError, onnx.shape_inference.InferenceError)
    try:
        onnx.checker.check_model(case.fused, full_check=True)
    except invalid as e:
        try:
            onnx.checker.check_model(case.unfused, full_check=True)
        except invalid as e0:  # e.g. bfloat16: the exporter's Elu-18 has no bfloat16 type
            pytest.skip(f"the exported (unfused) graph already fails the full check: "
                        f"{str(e0).splitlines()[0][:300]}")
        raise AssertionError(f"fused graph fails the full check, the unfused passes: {e}") from e


@pytest.mark.parametrize("name", CASES)
def test_b_loads_in_ort_with_op_library(name):
    case = get_case(name)
    why = ort_unavailable(case)
    if why is not None:
        pytest.skip(why)
    session(case.fused)


# --- (c) numerics -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_c_unfused_matches_eager(name):
    """Baseline (no rewrite involved): the exported graph itself equals eager autograd."""
    case = get_case(name)
    res = _results(name)
    assert_close(res["unfused"], res["eager"], case.dtype_name, f"unfused ({res['engine']}) vs eager")


@pytest.mark.parametrize("name", CASES)
def test_c_fused_matches_eager(name):
    case = get_case(name)
    res = _results(name)
    assert_close(res["fused"], res["eager"], case.dtype_name, f"fused ({res['engine']}) vs eager")


@pytest.mark.parametrize("name", CASES)
def test_c_fused_matches_unfused(name):
    case = get_case(name)
    res = _results(name)
    assert_close(res["fused"], res["unfused"], case.dtype_name, f"fused vs unfused ({res['engine']})")


# --- (d) negative controls ----------------------------------------------------------------------


@pytest.mark.parametrize("name", NEGATIVE)
def test_d_negative_control_not_fused_and_matches_eager(name):
    case = get_case(name)
    assert not elu_grads(case.fused), summary(case)
    assert not fused_sites(case, "EluGrad"), summary(case)
    res = _results(name)
    assert_close(res["fused"], res["eager"], case.dtype_name, f"negative control ({res['engine']}) vs eager")


# --- (e) cross-entropy and max-pool backward --------------------------------------------------


def _attrs(node: onnx.NodeProto) -> dict:
    out = {}
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, onnx.TensorProto):
            v = ("tensor", v.data_type, tuple(v.dims), onnx.numpy_helper.to_array(v).tobytes())
        elif isinstance(v, onnx.GraphProto):
            v = ("graph", v.SerializeToString())
        elif isinstance(v, list):
            v = tuple(v)
        out[a.name] = v
    return out


def test_corpus_has_max_pools_and_a_label_smoothed_cross_entropy():
    pools = sum(len(rg.expected_fusions(n)["max_pool"]) for n in ("conv2d_maxpool",))
    assert pools == 2
    (smoothed,) = rg.expected_fusions("label_smoothing")["cross_entropy"]
    assert smoothed["smoothed"] and not smoothed["direct"]


@pytest.mark.parametrize("name", CASES)
def test_e_cross_entropy_and_max_pool_fused_as_pytorch_ran_them(name):
    case = get_case(name)
    ce = nodes_of(case.fused, "SoftmaxCrossEntropyLossAndGrad")
    want_ce = Counter((c["reduction"], c["ignore_index"]) for c in case.subgraphs["cross_entropy"])
    got_ce = Counter((_attrs(n)["reduction"], _attrs(n)["ignore_index"]) for n in ce)
    assert got_ce == want_ce, summary(case)
    pools = nodes_of(case.fused, "MaxPoolGrad")
    want_pools = Counter((tuple(p["kernel"]), tuple(p["stride"]), tuple(p["padding"] * 2))
                         for p in case.subgraphs["max_pool"])
    got_pools = Counter((_attrs(n)["kernel_shape"], _attrs(n)["strides"], _attrs(n)["pads"]) for n in pools)
    assert got_pools == want_pools, summary(case)
    assert len(fused_sites(case, "SoftmaxCrossEntropyLossAndGrad")) == len(ce)
    assert len(fused_sites(case, "MaxPoolGrad")) == len(pools)
    assert not [n for n in case.fused.graph.node if n.op_type == "MaxPool" and len(n.output) > 1
                and any(o for o in n.output[1:])], "a fused MaxPool backward left its forward's Indices output"


# --- (f) nothing else changed -------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_f_nothing_else_changes(name):
    case = get_case(name)
    label = lambda n: n.name or f"{n.op_type}({n.output[0]})"
    before = {label(n): n for n in case.unfused.graph.node}
    after = {label(n): n for n in case.fused.graph.node}
    fused_nodes = {node for site in case.report.fused for node in site.nodes}
    pools = {node for site in fused_sites(case, "MaxPoolGrad") for node in site.nodes}
    new_ops = [n.name for n in case.fused.graph.node if n.domain == DOMAIN]
    for key, node in after.items():
        if node.domain == DOMAIN or any(key.startswith(f"{op}/") for op in new_ops):
            continue  # a fused op, or a Reshape of its operands
        assert key in before, f"node {key} ({node.op_type}) is neither an original node nor a fused op"
        old = before[key]
        outputs = list(old.output)
        if old.op_type == "MaxPool" and key in pools:
            outputs = outputs[:1]  # the forward of a fused max-pool backward: no Indices output
        assert (node.op_type, node.domain, list(node.input), list(node.output), _attrs(node)) == \
            (old.op_type, old.domain, list(old.input), outputs, _attrs(old)), f"node {key} changed"
    # what may go: the fused sites' nodes, and nodes that only fed what may go (e.g. Casts of the
    # operands of a float16 site, which EluGrad reads uncast)
    removable, readers = set(fused_nodes), {}
    outputs = {o.name for o in case.unfused.graph.output}
    for n in case.unfused.graph.node:
        for t in n.input:
            readers.setdefault(t, set()).add(label(n))
    changed = True
    while changed:
        changed = False
        for key, node in before.items():
            if key in removable or any(o in outputs for o in node.output):
                continue
            if all(readers.get(o, set()) <= removable for o in node.output if o):
                removable.add(key)
                changed = True
    for key, node in before.items():
        if key not in after:
            assert key in removable, f"original node {key} ({node.op_type}) is gone but is no fused site's"


@pytest.mark.parametrize("name", CASES)
def test_g_kept_protos_equal_graphsurgeon_export(name):
    """These exports are single graphs: the fused model keeps the original NodeProtos; it is the
    model graphsurgeon's export writes, node for node (and keeps what that export drops)."""
    case = get_case(name)
    exported = graphsurgeon_exported(rewrite.fuse_training, case.unfused)
    assert_same_model(case.fused, exported, case.unfused)


# --- (h) the placement pass's transpose folds ---------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_h_placement_folds_keep_the_results(name):
    """rewrite.placement folds Transposes into Gemm/MatMul flags and into the Transpose they undo
    (rewrite/placement/transposes.py). The placed graph, unplaced to standard ONNX (folds are not
    undone), passes the full check, has that many Transposes fewer, and gives the fused graph's ORT
    CPU results within the dtype's tolerance. Not bit for bit in general: the CPU EP's Gemm with
    transA sums a product in another order than its MatMul of the transposed copy (seen on the
    SELU control: grad.l2.weight, last bits); where nothing was folded into a product, bit for bit."""
    from ort_ops.rewrite.placement import PlacementReport, place, unplace

    case = get_case(name)
    why = ort_unavailable(case)
    if why is not None:
        pytest.skip(why)
    report = PlacementReport()
    folded = unplace(place(case.fused, soc="Ascend910B1", report=report))
    onnx.checker.check_model(folded, full_check=True)
    count = lambda m: sum(n.op_type == "Transpose" for n in m.graph.node)
    folds = [n for n in report.nodes if n.where == "folded" and n.op_type == "Transpose"]
    assert count(folded) == count(case.fused) - len(folds)
    want, got = run(case, seeded(case.fused)), run(case, seeded(folded))
    assert want.keys() == got.keys()
    assert_close(got, want, case.dtype_name, "folded vs fused")
    if not any("folded into" in n.reason for n in folds):
        for key in want:
            a, b = np.atleast_1d(np.asarray(want[key])), np.atleast_1d(np.asarray(got[key]))
            assert a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8)), key
