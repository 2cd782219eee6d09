"""Numerical validation of a rewrite: original in ORT (CPU) versus rewritten in ORT with the op
library, plus the rewritten graph in ``onnx.reference.ReferenceEvaluator`` (NumPy EluGrad)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
import onnxruntime as ort

import ort_ops
from ort_ops import DOMAIN, dtypes, ort_io
from ort_ops.reference import OPS

# The one tolerance table: dtype name -> (atol, rtol); |a - b| <= atol + rtol * |b|.
TOLERANCES = {
    "float32": (1e-5, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (6e-2, 3e-2),
    "float64": (1e-12, 1e-10),
}


@dataclass
class OutputCheck:
    name: str
    against: str  # "ort-original" or "reference"
    dtype: str
    max_abs: float
    max_rel: float
    ok: bool


@dataclass
class ValidationResult:
    checks: list[OutputCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def table(self) -> str:
        rows = [f"{'output':28s} {'against':13s} {'dtype':9s} {'max_abs':>10s} {'max_rel':>10s}  ok"]
        rows += [f"{c.name:28s} {c.against:13s} {c.dtype:9s} {c.max_abs:10.3g} {c.max_rel:10.3g}  "
                 f"{'yes' if c.ok else 'NO'}" for c in self.checks]
        return "\n".join(rows)


def _load(model) -> onnx.ModelProto:
    return onnx.load(model) if isinstance(model, str) else model


def _uses_domain(model: onnx.ModelProto) -> bool:
    return any(n.domain == DOMAIN for n in model.graph.node)


def session(model: onnx.ModelProto) -> ort.InferenceSession:
    """ORT CPU session with graph optimisations off; the op library when the model needs it."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if _uses_domain(model):
        ort_ops.register(so)
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def random_inputs(model: onnx.ModelProto, seed: int = 0, dim: int = 2) -> dict[str, np.ndarray]:
    """Random feeds for every graph input that is not an initializer (dynamic dims -> ``dim``)."""
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else dim for d in tt.shape.dim]
        if tt.elem_type == onnx.TensorProto.BFLOAT16:
            np_type = dtypes.numpy_dtype("bfloat16")
        else:
            np_type = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.issubdtype(np_type, np.integer):
            feeds[vi.name] = rng.integers(0, 3, shape).astype(np_type)
        elif np_type == np.bool_:
            feeds[vi.name] = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            feeds[vi.name] = (rng.standard_normal(shape) * 2).astype(np.float32).astype(np_type)
    return feeds


def compare(name, against, got, want, tolerances=TOLERANCES) -> OutputCheck:
    got, want = np.asarray(got), np.asarray(want)
    try:
        dtype = dtypes.canonical_name(want.dtype)
    except TypeError:
        dtype = str(want.dtype)
    atol, rtol = tolerances.get(dtype, (0.0, 0.0))
    g, w = got.astype(np.float64), want.astype(np.float64)
    same_nan = np.isnan(g) == np.isnan(w)
    with np.errstate(all="ignore"):
        diff = np.where(np.isnan(g) & np.isnan(w), 0.0, np.abs(g - w))
        diff = np.where(g == w, 0.0, diff)  # equal infinities
        rel = diff / np.maximum(np.abs(w), np.finfo(np.float64).tiny)
    ok = bool(got.shape == want.shape and same_nan.all() and (diff <= atol + rtol * np.abs(w)).all())
    max_abs = float(np.nanmax(diff)) if diff.size else 0.0
    max_rel = float(np.nanmax(rel)) if rel.size else 0.0
    return OutputCheck(name, against, dtype, max_abs, max_rel, ok)


def validate(original, rewritten, *, seed: int = 0, feeds=None, reference: bool = True,
             tolerances=TOLERANCES, out=print) -> ValidationResult:
    """Run both models on the same random inputs and compare every output.

    ``original`` runs in ORT (CPU); ``rewritten`` in ORT with ``ort_ops.register`` and, when
    ``reference`` is true, in ``ReferenceEvaluator(new_ops=OPS)``. Prints a table of max
    abs/rel errors per output through ``out`` (None: silent). Models or file paths.
    """
    original, rewritten = _load(original), _load(rewritten)
    feeds = feeds if feeds is not None else random_inputs(original, seed)
    names = [o.name for o in rewritten.graph.output]
    want = dict(zip(names, ort_io.run(session(original), feeds, names)))
    got = dict(zip(names, ort_io.run(session(rewritten), feeds, names)))
    result = ValidationResult([compare(n, "ort-original", got[n], want[n], tolerances) for n in names])
    if reference:
        evaluator = onnx.reference.ReferenceEvaluator(rewritten, new_ops=list(OPS))
        ref = evaluator.run(None, feeds)
        result.checks += [compare(n, "reference", r, got[n], tolerances) for n, r in zip(names, ref)]
    if out is not None:
        out(result.table())
    return result
