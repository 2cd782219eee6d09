"""Structural queries over an onnx-graphsurgeon graph that the rewrite rules share.

Everything here matches on graph structure (producers, consumers, op types, constant values),
never on tensor names.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops import dtypes

# ONNX elem type -> our dtype name, for the three dtypes EluGrad supports.
LOW_PRECISION = {TensorProto.FLOAT16: "float16", TensorProto.BFLOAT16: "bfloat16"}
DTYPE_NAMES = {TensorProto.FLOAT: "float32", **LOW_PRECISION}

# Ops whose output has the element type of their first input (used to find dtypes without
# running shape inference).
_SAME_TYPE_OPS = frozenset(
    "Identity Elu Relu LeakyRelu Selu Celu Gelu Sigmoid Tanh Exp Log Neg Abs Sqrt Reciprocal "
    "Add Sub Mul Div Pow Min Max Sum MatMul Gemm Conv ConvTranspose BatchNormalization "
    "LayerNormalization Softmax LogSoftmax Reshape Transpose Flatten Squeeze Unsqueeze Expand "
    "Concat Slice Gather Pad ReduceSum ReduceMean MaxPool AveragePool GlobalAveragePool Dropout "
    "Tile Erf Clip".split()
)
_MAX_CONST_ELEMENTS = 16


def _elem_of(dtype) -> int | None:
    """ONNX elem type of a graphsurgeon dtype (NumPy dtype or TensorProto code), or None."""
    if dtype is None:
        return None
    if isinstance(dtype, int):
        return dtype
    try:
        np_dtype = np.dtype(dtype)
        if np_dtype == dtypes.numpy_dtype("bfloat16"):
            return TensorProto.BFLOAT16
        return onnx.helper.np_dtype_to_tensor_dtype(np_dtype)
    except (TypeError, KeyError, ValueError):
        return None


def node_label(node: gs.Node) -> str:
    """A node's name, or ``Op(first output)`` for unnamed nodes (for reports)."""
    if node.name:
        return node.name
    out = node.outputs[0].name if node.outputs else "?"
    return f"{node.op}({out})"


class GraphView:
    """Producer / consumer / constant / dtype queries on one graphsurgeon graph."""

    def __init__(self, graph: gs.Graph, model: onnx.ModelProto | None = None):
        self.graph = graph
        self._model = model
        self._inferred: dict[str, int] | None = None
        # id(tensor) -> (tensor, elem type, resolved from the graph rather than by inference)
        # memos keyed by id(tensor), holding the tensor so the id stays valid; the rules only
        # read the graph, and edits never change a tensor's value or type
        self._const_cache: dict[int, tuple[object, np.ndarray | None]] = {}
        self._elem_cache: dict[int, tuple[object, int | None, bool]] = {}
        self.output_names = {t.name for t in graph.outputs}

    # -- structure ------------------------------------------------------------------------
    @staticmethod
    def producer(tensor) -> gs.Node | None:
        return tensor.inputs[0] if tensor is not None and tensor.inputs else None

    def producer_op(self, tensor, *ops: str) -> gs.Node | None:
        """The producer of ``tensor`` if its op type (default domain) is one of ``ops``."""
        node = self.producer(tensor)
        if node is not None and node.op in ops and node.domain in ("", "ai.onnx", None):
            return node
        return None

    def other_users(self, tensor, allowed_ids: set[int]) -> str | None:
        """Why ``tensor`` is needed outside the pattern (nodes ``allowed_ids``), or None."""
        if tensor.name in self.output_names:
            return "is a graph output"
        for user in tensor.outputs:
            if id(user) not in allowed_ids:
                return f"is also used by {node_label(user)}"
        return None

    # -- constants ------------------------------------------------------------------------
    def const(self, tensor) -> np.ndarray | None:
        """The value of a small constant tensor (initializer, Constant, Cast/CastLike of one).

        Memoized per tensor (rules ask about the same shared constants at every site)."""
        hit = self._const_cache.get(id(tensor))
        if hit is not None and hit[0] is tensor:
            return hit[1]
        value = self._const(tensor)
        self._const_cache[id(tensor)] = (tensor, value)
        return value

    def _const(self, tensor) -> np.ndarray | None:
        for _ in range(8):
            if isinstance(tensor, gs.Constant):
                if getattr(tensor, "data_location", None) == TensorProto.EXTERNAL:
                    return None
                if _size(tensor.shape) > _MAX_CONST_ELEMENTS:
                    return None
                return np.asarray(tensor.values)
            node = self.producer(tensor)
            if node is None or node.domain not in ("", "ai.onnx", None):
                return None
            if node.op == "Constant":
                return self._constant_attr(node)
            if node.op == "Identity":
                tensor = node.inputs[0]
                continue
            if node.op == "Cast":
                value = self.const(node.inputs[0])
                if value is None:
                    return None
                return _cast(value, node.attrs.get("to"))
            if node.op == "CastLike":
                value = self.const(node.inputs[0])
                if value is None:
                    return None
                target = self.elem_type(node.inputs[1])
                if target is None:  # exact in every float type: 0, +-1, +-0.5, 2
                    ok = np.all(np.isin(np.abs(value.astype(np.float64)), (0.0, 0.5, 1.0, 2.0)))
                    return value.astype(np.float32) if ok else None
                return _cast(value, target)
            return None
        return None

    @staticmethod
    def _constant_attr(node: gs.Node) -> np.ndarray | None:
        for key, value in node.attrs.items():
            if key == "value" and isinstance(value, gs.Constant):
                if int(np.prod(value.shape or ())) > _MAX_CONST_ELEMENTS:
                    return None
                return np.asarray(value.values)
            if key == "value_float":
                return np.array(value, dtype=np.float32)
            if key == "value_int":
                return np.array(value, dtype=np.int64)
            if key in ("value_floats", "value_ints"):
                return np.array(value, dtype=np.float32 if key == "value_floats" else np.int64)
        return None

    def scalar(self, tensor) -> np.generic | None:
        """A one-element constant as a NumPy scalar (its own dtype), else None."""
        value = self.const(tensor)
        if value is None or value.size != 1 or value.ndim > 1:
            return None
        return value.reshape(())[()]

    def is_scalar(self, tensor, target: float) -> bool:
        value = self.scalar(tensor)
        return value is not None and _is_number(value) and float(value) == target

    # -- identity-like wrappers -----------------------------------------------------------
    def strip(self, tensor):
        """Look through Identity and Mul-by-1 (a one-element constant 1): the tensor itself."""
        for _ in range(16):
            node = self.producer(tensor)
            if node is None or node.domain not in ("", "ai.onnx", None):
                return tensor
            if node.op == "Identity":
                tensor = node.inputs[0]
            elif node.op == "Mul" and len(node.inputs) == 2:
                a, b = node.inputs
                if self.is_scalar(b, 1.0) and self.const(a) is None:
                    tensor = a
                elif self.is_scalar(a, 1.0) and self.const(b) is None:
                    tensor = b
                else:
                    return tensor
            else:
                return tensor
        return tensor

    def upcast_source(self, tensor):
        """``t`` when ``tensor`` is ``Cast(t, to=FLOAT)`` (modulo Identity / Mul-by-1), else None."""
        tensor = self.strip(tensor)
        node = self.producer_op(tensor, "Cast")
        if node is None or node.attrs.get("to") != TensorProto.FLOAT:
            return None
        return self.strip(node.inputs[0])

    def downcast_consumer(self, tensor) -> tuple[gs.Node, int] | None:
        """``(cast, elem_type)`` when ``tensor``'s only use is ``Cast(tensor, to=FLOAT16|BFLOAT16)``."""
        if tensor.name in self.output_names or len(tensor.outputs) != 1:
            return None
        node = tensor.outputs[0]
        if node.op != "Cast" or node.domain not in ("", "ai.onnx", None):
            return None
        to = node.attrs.get("to")
        return (node, to) if to in LOW_PRECISION else None

    def find_consumer(self, tensor, op: str) -> gs.Node | None:
        """A node of type ``op`` fed by ``tensor`` directly or through Identity / Mul-by-1."""
        frontier, seen = [tensor], set()
        for _ in range(4):
            nxt = []
            for t in frontier:
                for user in t.outputs:
                    if id(user) in seen or user.domain not in ("", "ai.onnx", None):
                        continue
                    seen.add(id(user))
                    if user.op == op:
                        return user
                    if user.op in ("Identity", "Mul") and user.outputs:
                        if self.strip(user.outputs[0]) is t:
                            nxt.append(user.outputs[0])
            frontier = nxt
        return None

    # -- types ----------------------------------------------------------------------------
    def elem_type(self, tensor) -> int | None:
        """ONNX element type of ``tensor`` from metadata, producers, or (lazily) shape inference.

        Walks up through type-preserving producers. Every tensor on a resolved walk has the same
        element type, so all of them are memoized: over a whole graph the walks stay linear
        (an uncached walk from deep inside a long chain of same-type ops would otherwise cost up
        to 64 steps per query).
        """
        cache = self._elem_cache
        hit = cache.get(id(tensor))
        if hit is not None and hit[0] is tensor:
            return hit[1]
        start, path, elem, decided = tensor, [], None, False
        for _ in range(64):
            hit = cache.get(id(tensor))
            if hit is not None and hit[0] is tensor:
                # a tensor whose walk was unresolved ends this walk unresolved too
                elem, decided = (hit[1], True) if hit[2] else (None, False)
                break
            path.append(tensor)
            elem = _elem_of(tensor.dtype)
            if elem:
                break
            elem = None
            node = self.producer(tensor)
            if node is None or node.domain not in ("", "ai.onnx", None):
                break
            if node.op == "Cast":
                elem, decided = node.attrs.get("to"), True
                break
            if node.op == "CastLike":
                tensor = node.inputs[1]
            elif node.op == "Constant":
                value = self._constant_attr(node)
                elem = None if value is None else _elem_of(value.dtype)
                decided = True
                break
            elif node.op == "Where" and len(node.inputs) == 3:
                tensor = node.inputs[1]
            elif node.op in _SAME_TYPE_OPS and node.inputs:
                tensor = node.inputs[0]
            else:
                break
        if elem or decided:
            for t in path:
                cache[id(t)] = (t, elem, True)
            return elem
        elem = self._inferred_types().get(start.name)
        cache[id(start)] = (start, elem, False)
        return elem

    def dtype_name(self, tensor) -> str | None:
        """'float32' / 'float16' / 'bfloat16' for tensors of those types, else None."""
        return DTYPE_NAMES.get(self.elem_type(tensor))

    def _inferred_types(self) -> dict[str, int]:
        if self._inferred is None:
            self._inferred = {}
            if self._model is not None:
                try:
                    inferred = onnx.shape_inference.infer_shapes(self._model)
                except Exception:  # noqa: BLE001 - inference is only a fallback
                    inferred = None
                if inferred is not None:
                    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
                        if vi.type.tensor_type.elem_type:
                            self._inferred[vi.name] = vi.type.tensor_type.elem_type
        return self._inferred

    @staticmethod
    def known_shape(tensor) -> tuple | None:
        shape = tensor.shape
        if shape is None:
            return None
        return tuple(d if isinstance(d, int) else str(d) for d in shape)


def _size(shape) -> int:
    """Element count of a constant's shape (``()``/None: a scalar)."""
    return math.prod(int(d) for d in shape) if shape else 1


def _is_number(value) -> bool:
    return np.issubdtype(np.asarray(value).dtype, np.number) or np.asarray(value).dtype.kind == "V"


def _cast(value: np.ndarray, to) -> np.ndarray | None:
    try:
        np_type = onnx.helper.tensor_dtype_to_np_dtype(int(to))
    except (KeyError, TypeError, ValueError):
        return None
    if to == TensorProto.BFLOAT16:
        np_type = dtypes.numpy_dtype("bfloat16")
    with np.errstate(all="ignore"):
        return value.astype(np_type)


def float32_of(value) -> np.float32:
    """A constant's value as float32 (how alpha is stored in an attribute)."""
    return np.float32(np.asarray(value).astype(np.float32))
