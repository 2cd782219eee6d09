"""Numerical validation of a rewrite: the original in ORT (CPU) against the rewritten model in
ORT with the op library, and the rewritten model in ``onnx.reference.ReferenceEvaluator``
(NumPy EluGrad) against that.

Inputs are the model's real values where it has them: initializers as they are; for graph
inputs, the values the caller gives (a dict or an ``.npz`` file), else values drawn the way the
model would see them: parameters (graph inputs with a ``grad.<name>`` output, as
``export_training_graph(params_as_inputs=True)`` writes them) like PyTorch's default
initialisation (uniform in +-1/sqrt(fan_in)), class-index inputs within the range the graph
indexes with (:mod:`ort_ops.input_ranges`), other inputs N(0, 1). The result says which were used.

Random ops (Dropout in training mode, RandomNormal, ...) are given the same seed in both models
so that ORT draws the same values; outputs that still differ between two runs of the original are
reported as not comparable instead of failing, and the reference evaluator (which draws
differently) is skipped for such models. A failure of the reference evaluator itself is a
skipped check with its reason, never a validation failure. NaN/inf at the same places in both
results are counted and reported, not mismatches; a changed shape is a mismatch with a message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import onnx
import onnxruntime as ort

import ort_ops
from ort_ops import DOMAIN, dtypes, ort_io
from ort_ops.input_ranges import label_ranges
from ort_ops.reference import OPS
from ort_ops.tolerances import TOLERANCES, check
from ort_ops.training.interface import GRAD_PREFIX

RANDOM_OPS = frozenset({"Dropout", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                        "Bernoulli", "Multinomial"})
VALIDATION_SEED = 20240101.0


@dataclass
class OutputCheck:
    name: str
    against: str  # "ort-original" or "reference"
    dtype: str
    max_abs: float
    max_rel: float  # max_abs relative to max|want| (the scale the tolerance uses)
    ok: bool
    nonfinite: int = 0  # NaN/inf elements equal in both results
    message: str = ""


@dataclass
class ValidationResult:
    checks: list[OutputCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # inputs used, skipped checks, random ops
    not_compared: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def table(self) -> str:
        rows = [f"{'output':28s} {'against':13s} {'dtype':9s} {'max_abs':>10s} {'max_rel':>10s} "
                f"{'non-finite':>10s}  ok"]
        rows += [f"{c.name:28s} {c.against:13s} {c.dtype:9s} {c.max_abs:10.3g} {c.max_rel:10.3g} {c.nonfinite:10d}  "
                 f"{'yes' if c.ok else 'NO'}{'  ' + c.message if c.message else ''}" for c in self.checks]
        rows += [f"note: {n}" for n in self.notes]
        return "\n".join(rows)


def _load(model) -> tuple[onnx.ModelProto, str | None]:
    """``(the model without its external data, its path or None)``."""
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        return onnx.load(path, load_external_data=False), path
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"expected an onnx.ModelProto or a file path, got {type(model).__name__}")
    return model, None


def _uses_domain(model: onnx.ModelProto) -> bool:
    from ort_ops.rewrite.graph_scopes import all_node_lists

    return any(n.domain == DOMAIN for _, nodes in all_node_lists(model) for n in nodes)


def session(model: onnx.ModelProto, path: str | None = None) -> ort.InferenceSession:
    """ORT CPU session with graph optimisations off; the op library when the model needs it.
    From ``path`` when given (external data is then read relative to it)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if _uses_domain(model):
        ort_ops.register(so)
    return ort.InferenceSession(path if path is not None else model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def session_from_path(path: str) -> ort.InferenceSession:
    return session(onnx.load(path, load_external_data=False), path)


def _np_type(elem: int):
    if elem == onnx.TensorProto.BFLOAT16:
        return dtypes.numpy_dtype("bfloat16")
    return onnx.helper.tensor_dtype_to_np_dtype(elem)


def make_inputs(model: onnx.ModelProto, seed: int = 0, given=None, dim: int = 2) -> tuple[dict, list[str]]:
    """Feeds for every graph input that is not an initializer, and one note per kind of source
    (see the module docstring). ``given``: a dict or the path of an ``.npz`` file."""
    rng = np.random.default_rng(seed)
    if isinstance(given, (str, os.PathLike)):
        with np.load(os.fspath(given), allow_pickle=False) as z:
            given = {k: z[k] for k in z.files}
    given = dict(given or {})
    inits = {t.name for t in model.graph.initializer}
    outputs = {o.name for o in model.graph.output}
    inputs = [vi for vi in model.graph.input if vi.name not in inits]
    unknown = sorted(set(given) - {vi.name for vi in inputs})
    if unknown:
        raise ValueError(f"given inputs {unknown} are not inputs of the model (inputs: {[vi.name for vi in inputs]})")
    ranges = label_ranges(model, [vi.name for vi in inputs])
    shapes = {vi.name: [d.dim_value if d.HasField("dim_value") else dim for d in vi.type.tensor_type.shape.dim]
              for vi in inputs}
    feeds, sources = {}, {}
    for vi in inputs:
        name, shape = vi.name, shapes[vi.name]
        np_type = _np_type(vi.type.tensor_type.elem_type)
        if name in given:
            value = np.asarray(given[name])
            if list(value.shape) != shape and all(d > 0 for d in shape):
                raise ValueError(f"given input {name!r} has shape {list(value.shape)}, the model expects {shape}")
            feeds[name], sources[name] = value.astype(np_type, copy=False), "given"
        elif name in ranges:
            feeds[name] = rng.integers(0, ranges[name].size, shape).astype(np_type)
            sources[name] = f"class indices in [0, {ranges[name].size})"
        elif np.issubdtype(np_type, np.integer):
            feeds[name], sources[name] = rng.integers(0, 3, shape).astype(np_type), "integers in [0, 3)"
        elif np_type == np.bool_:
            feeds[name], sources[name] = rng.integers(0, 2, shape).astype(np.bool_), "random booleans"
        elif GRAD_PREFIX + name in outputs:
            fan_in = _fan_in(name, shape, shapes)
            bound = 1.0 / np.sqrt(max(fan_in, 1))
            feeds[name] = rng.uniform(-bound, bound, shape).astype(np.float32).astype(np_type)
            sources[name] = "a parameter: uniform in +-1/sqrt(fan_in), like PyTorch's default initialisation"
        else:
            feeds[name] = rng.standard_normal(shape).astype(np.float32).astype(np_type)
            sources[name] = "N(0, 1)"
    by_source: dict[str, list[str]] = {}
    for name, src in sources.items():
        by_source.setdefault(src, []).append(name)
    notes = [f"inputs {', '.join(names)}: {src}" for src, names in by_source.items()]
    return feeds, notes


def random_inputs(model: onnx.ModelProto, seed: int = 0, dim: int = 2) -> dict[str, np.ndarray]:
    """Feeds for every graph input (see :func:`make_inputs`)."""
    return make_inputs(model, seed, dim=dim)[0]


def _fan_in(name: str, shape: list[int], shapes: dict) -> int:
    if len(shape) >= 2:
        return int(np.prod(shape[1:]))
    for suffix in (".bias", "bias"):
        if name.endswith(suffix):
            weight = shapes.get(name[: -len(suffix)] + suffix.replace("bias", "weight"))
            if weight and len(weight) >= 2:
                return int(np.prod(weight[1:]))
    return int(np.prod(shape)) if shape else 1


def compare(name, against, got, want, tolerances=TOLERANCES) -> OutputCheck:
    """``got`` against ``want`` by the project's tolerance rule (:mod:`ort_ops.tolerances`)."""
    got, want = np.asarray(got), np.asarray(want)
    try:
        dtype = dtypes.canonical_name(want.dtype, allowed=tuple(tolerances))
    except TypeError:
        dtype = str(want.dtype)
    tolerance = tolerances.get(dtype)
    if tolerance is None:  # integers, booleans: equal
        equal = got.shape == want.shape and np.array_equal(got, want)
        return OutputCheck(name, against, dtype, 0.0 if equal else float("inf"), 0.0, equal,
                           message="" if equal else "values differ")
    result = check(got, want, tolerance)
    with np.errstate(all="ignore"):
        scale = float(np.abs(want[np.isfinite(want)].astype(np.float64)).max()) if np.isfinite(want).any() else 0.0
    rel = result.max_abs / scale if scale else (0.0 if result.max_abs == 0 else float("inf"))
    return OutputCheck(name, against, dtype, result.max_abs, rel, result.ok, result.nonfinite, result.message)


def _with_data(model: onnx.ModelProto, path: str | None) -> onnx.ModelProto:
    """The model with its external data in memory (what the reference evaluator needs)."""
    return onnx.load(path) if path is not None else model


def _random_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    from ort_ops.rewrite.graph_scopes import all_node_lists

    found = []
    for _, nodes in all_node_lists(model):
        for node in nodes:
            if node.op_type in RANDOM_OPS and node.domain in ("", "ai.onnx"):
                if node.op_type == "Dropout" and len(node.input) < 3:
                    continue  # no training_mode input: inference, the identity
                found.append(node)
    return found


def _seeded(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy whose random ops carry a seed derived from their output name (same in both)."""
    from ort_ops.rewrite.graph_scopes import all_node_lists

    out = onnx.ModelProto()
    out.CopyFrom(model)
    for _, nodes in all_node_lists(out):
        for node in nodes:
            if node.op_type in RANDOM_OPS and node.output:
                keep = [a for a in node.attribute if a.name != "seed"]
                del node.attribute[:]
                seed = VALIDATION_SEED + (sum(map(ord, node.output[0])) % 9973)
                value = int(seed) if node.op_type == "Dropout" else float(seed)  # Dropout's seed is an int
                node.attribute.extend(keep + [onnx.helper.make_attribute("seed", value)])
    return out


def validate(original, rewritten, *, seed: int = 0, feeds=None, inputs=None, reference: bool = True,
             tolerances=TOLERANCES, out=print) -> ValidationResult:
    """Run both models on the same inputs and compare every output; see the module docstring.

    ``original``/``rewritten``: models or file paths. ``inputs`` (or ``feeds``): values for some
    or all graph inputs, a dict or an ``.npz`` path. Prints a table of max abs/rel errors per
    output and the notes through ``out`` (None: silent).
    """
    original, original_path = _load(original)
    rewritten, rewritten_path = _load(rewritten)
    result = ValidationResult()
    feeds, notes = make_inputs(original, seed, feeds if feeds is not None else inputs)
    result.notes += notes
    random = _random_nodes(original)
    if random:
        original = _seeded(_with_data(original, original_path))
        rewritten = _seeded(_with_data(rewritten, rewritten_path))
        original_path = rewritten_path = None
        kinds = sorted({n.op_type for n in random})
        result.notes.append(f"random ops ({', '.join(kinds)}): both models seeded alike")
    names = [o.name for o in rewritten.graph.output]
    first = session(original, original_path)
    want = dict(zip(names, ort_io.run(first, feeds, names)))
    if random:
        again = dict(zip(names, ort_io.run(first, feeds, names)))
        for n in names:
            if np.asarray(want[n]).tobytes() != np.asarray(again[n]).tobytes():
                result.not_compared.append(n)
        if result.not_compared:
            result.notes.append(f"outputs {result.not_compared} differ between two runs of the original (random "
                                "ops): not compared")
    got = dict(zip(names, ort_io.run(session(rewritten, rewritten_path), feeds, names)))
    compared = [n for n in names if n not in result.not_compared]
    result.checks += [compare(n, "ort-original", got[n], want[n], tolerances) for n in compared]
    if reference and random:
        result.notes.append("reference check skipped: random ops draw differently in onnx's reference evaluator")
    elif reference:
        try:
            evaluator = onnx.reference.ReferenceEvaluator(_with_data(rewritten, rewritten_path), new_ops=list(OPS))
            ref = evaluator.run(None, feeds)
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            result.notes.append(f"reference check skipped: {type(exc).__name__}: {first[:200]}")
        else:
            result.checks += [compare(n, "reference", r, got[n], tolerances)
                              for n, r in zip(names, ref) if n in compared]
    if out is not None:
        out(result.table())
    return result
