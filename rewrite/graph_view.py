"""Structural queries over an onnx-graphsurgeon graph that the rewrite rules share.

Everything here matches on graph structure (producers, consumers, op types, constant values),
never on tensor names. A :class:`GraphView` looks at one graph *scope*: the main graph, a
subgraph (If/Loop/Scan body) or a model-local function. Tensors of enclosing scopes are visible
in it; nodes of other scopes (a subgraph's nodes reading an outer tensor) are not its consumers.
"""

from __future__ import annotations

import functools
import math
import os

import numpy as np
import onnx
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops import dtypes

# ONNX elem type -> our dtype name, for the three dtypes EluGrad supports.
LOW_PRECISION = {TensorProto.FLOAT16: "float16", TensorProto.BFLOAT16: "bfloat16"}
DTYPE_NAMES = {TensorProto.FLOAT: "float32", **LOW_PRECISION}
DEFAULT_DOMAINS = ("", "ai.onnx", None)

# Ops whose output has the element type of their first input (used to find dtypes without
# running shape inference).
_SAME_TYPE_OPS = frozenset(
    "Identity Elu Celu Relu LeakyRelu Selu Gelu Sigmoid Tanh Exp Log Neg Abs Sqrt Reciprocal "
    "Add Sub Mul Div Pow Min Max Sum MatMul Gemm Conv ConvTranspose BatchNormalization "
    "LayerNormalization Softmax LogSoftmax Reshape Transpose Flatten Squeeze Unsqueeze Expand "
    "Concat Slice Gather Pad ReduceSum ReduceMean MaxPool AveragePool GlobalAveragePool Dropout "
    "Tile Erf Clip".split()
)
# Ops whose output holds exactly the elements of their first input (same values, maybe another
# shape): EluGrad, elementwise, may read such a tensor in place of the original.
VIEW_OPS = frozenset({"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"})
# Ops whose output has their first input's shape, and ops whose output has the (multidirectional)
# broadcast shape of all their inputs: enough to derive the shapes of a training graph's
# elementwise parts from its inputs' without running shape inference over the whole model.
_SAME_SHAPE_OPS = frozenset(
    "Identity Elu Celu Relu LeakyRelu Selu Gelu Sigmoid Tanh Exp Log Neg Abs Sqrt Reciprocal Erf Not Cast "
    "Softplus Sign Floor Ceil IsNaN IsInf".split()
)
_BROADCAST_OPS = frozenset(
    "Add Sub Mul Div Pow Where Equal Less LessOrEqual Greater GreaterOrEqual And Or Xor Max Min Sum Mean".split()
)
# The producers through which const() / uniform() can find a value, and those strip() looks
# through: a tensor made by any other op (or by none, and not a constant) has no value, or is its
# own stripped self, without a look at the memos.
_VALUE_OPS = frozenset({"Constant", "Cast", "CastLike", "ConstantOfShape", "Expand", *VIEW_OPS})
_STRIPPED_OPS = frozenset({"Identity", "Mul"})
_MAX_CONST_ELEMENTS = 16
_UNRESOLVED = object()  # elem_type memo: a tensor on an unresolved walk (shape inference decides)
_MAX_UNIFORM_ELEMENTS = 1 << 16


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


def is_default_domain(node: gs.Node) -> bool:
    return node.domain in DEFAULT_DOMAINS


class GraphView:
    """Producer / consumer / constant / dtype / shape queries on one graph scope.

    ``visible`` holds the ids of the nodes of this scope and its enclosing scopes (a value of an
    enclosing scope may be read here); ``local`` those of this scope only. ``base_dir`` is where
    external data files are, for the few small constants a rule needs the value of.
    """

    def __init__(self, graph: gs.Graph, model: onnx.ModelProto | None = None, *,
                 enclosing: GraphView | None = None, base_dir: str | None = None,
                 input_types: dict[str, int] | None = None):
        self.graph = graph
        self._model = model
        # element types of a function's formal inputs, from its call sites (functions are untyped)
        self.input_types = dict(input_types or {})
        self.base_dir = base_dir
        # a ProtoGraph (one graph, its nodes built lazily) names the type of its nodes instead
        self._node_type = getattr(type(graph), "node_type", None)  # (gs.Graph.__getattr__ looks up ops)
        if self._node_type is None:
            self.local = {id(n) for n in graph.nodes}
            self.visible = self.local | (enclosing.visible if enclosing is not None else set())
        # memos keyed by id(tensor), holding the tensor so the id stays valid (an id found in a
        # memo is that tensor's: a hit needs no identity check); the rules only read the graph,
        # and edits never change a tensor's value or type
        self._const_cache: dict[int, tuple[object, np.ndarray | None]] = {}
        self._elem_cache: dict[int, tuple[object, int | None, bool]] = {}
        self._uniform_cache: dict[int, tuple[object, np.float32 | None]] = {}
        self._strip_cache: dict[int, tuple[object, object]] = {}
        self._shape_cache: dict[int, tuple[object, tuple | None]] = {}
        # a ProtoGraph answers the dtype and shape walks by tensor name from its index, without
        # making node or tensor objects for the (maybe many) nodes walked through: memos by name
        self._by_name = self._node_type is not None and hasattr(graph, "first_producer")
        self._elem_by_name: dict[str, tuple[str, int | None, bool]] = {}
        self._shape_by_name: dict[str, tuple[str, tuple | None]] = {}
        self.unreadable: dict[str, str] = {}  # constant name -> why its value could not be read
        self._memos: dict[str, dict] = {}
        self.output_names = {t.name for t in graph.outputs}

    def memo(self, name: str) -> dict:
        """A dict of this view's, ``name``'s own, for a rule's query that is a pure function of
        the graph (it lives as long as the view: the matching, before any edit). Keys by
        ``id(object)`` must keep the object in the value, as the memos above do."""
        memo = self._memos.get(name)
        if memo is None:
            memo = self._memos[name] = {}
        return memo

    @property
    def model(self) -> onnx.ModelProto | None:
        """The model the graph belongs to (its opset imports), if the view was given it."""
        return self._model

    # -- structure ------------------------------------------------------------------------
    @staticmethod
    def producer(tensor) -> gs.Node | None:
        return tensor.inputs[0] if tensor is not None and tensor.inputs else None

    def producer_op(self, tensor, *ops: str) -> gs.Node | None:
        """The producer of ``tensor`` if its op type (default domain) is one of ``ops``."""
        if tensor is None or not tensor.inputs:
            return None
        node = tensor.inputs[0]
        return node if node.op in ops and node.domain in DEFAULT_DOMAINS else None

    def consumers(self, tensor) -> list[gs.Node]:
        """Nodes of this scope or an enclosing one that read ``tensor`` (not nested subgraphs')."""
        if self._node_type is not None:
            return [n for n in tensor.outputs if type(n) is self._node_type]
        return [n for n in tensor.outputs if id(n) in self.visible]

    def is_local(self, node) -> bool:
        """``node`` is a node of this scope (not of an enclosing one, not one an edit added)."""
        return type(node) is self._node_type if self._node_type is not None else id(node) in self.local

    # -- constants ------------------------------------------------------------------------
    def const(self, tensor) -> np.ndarray | None:
        """The value of a small constant tensor (initializer, Constant, Cast/CastLike of one).

        Memoized per tensor (rules ask about the same shared constants at every site). An
        initializer in external data is read from its file (``base_dir``) when small; when it
        cannot be, ``unreadable`` says why and the result is None."""
        hit = self._const_cache.get(id(tensor))
        if hit is not None:
            return hit[1]
        value = self._const(tensor)
        self._const_cache[id(tensor)] = (tensor, value)
        return value

    def _const(self, tensor) -> np.ndarray | None:
        for _ in range(8):
            if isinstance(tensor, gs.Constant):
                if _size(tensor.shape) > _MAX_CONST_ELEMENTS:
                    return None
                if getattr(tensor, "data_location", None) == TensorProto.EXTERNAL:
                    return self._external(tensor)
                return np.asarray(tensor.values)
            node = self.producer(tensor)
            if node is None or not is_default_domain(node):
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

    def _external(self, tensor: gs.Constant) -> np.ndarray | None:
        """A small external-data initializer's value, read from its file (not the whole file)."""
        proto = getattr(getattr(tensor, "_values", None), "tensor", None)
        if proto is None:
            self.unreadable[tensor.name] = "its external data reference is not available"
            return None
        info = {e.key: e.value for e in proto.external_data}
        location = info.get("location", "")
        if self.base_dir is None:
            self.unreadable[tensor.name] = (f"it is stored as external data in {location!r} and the model's "
                                            "folder is unknown (pass base_dir or a file path)")
            return None
        path = os.path.join(self.base_dir, location)
        try:
            np_type = (dtypes.numpy_dtype("bfloat16") if proto.data_type == TensorProto.BFLOAT16
                       else onnx.helper.tensor_dtype_to_np_dtype(proto.data_type))
            count = _size(tuple(proto.dims))
            nbytes = count * np.dtype(np_type).itemsize
            offset, length = int(info.get("offset", 0)), int(info.get("length", nbytes))
            if length != nbytes:
                raise ValueError(f"length {length} does not fit {count} element(s) of {np.dtype(np_type)}")
            with open(path, "rb") as f:
                f.seek(offset)
                raw = f.read(nbytes)
            if len(raw) != nbytes:
                raise ValueError(f"the file ends after {len(raw)} of {nbytes} bytes at offset {offset}")
            return np.frombuffer(raw, dtype=np.dtype(np_type).newbyteorder("<")).reshape(tuple(proto.dims))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self.unreadable[tensor.name] = f"its external data {path} could not be read: {exc}"
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

    def uniform(self, tensor) -> np.float32 | None:
        """The value, as float32, of a tensor provably filled with one number: a one-element
        constant, a small constant with all elements equal, ``ConstantOfShape``, or ``Expand`` /
        a view op of such a tensor. None otherwise. Memoized per tensor, as :meth:`const`."""
        if tensor is None:
            return None
        producers = tensor.inputs
        if (not producers or producers[0].op not in _VALUE_OPS) and not isinstance(tensor, gs.Constant):
            return None
        hit = self._uniform_cache.get(id(tensor))
        if hit is not None:
            return hit[1]
        value = self._uniform(tensor)
        self._uniform_cache[id(tensor)] = (tensor, value)
        return value

    def _uniform(self, tensor) -> np.float32 | None:
        for _ in range(8):
            value = self.const(tensor)
            if value is not None:
                if value.size == 0 or not _is_number(value):
                    return None
                flat = value.reshape(-1).astype(np.float32)
                return flat[0] if np.all(flat.view(np.uint32) == flat[:1].view(np.uint32)) else None
            if isinstance(tensor, gs.Constant):  # larger than a "small" constant
                if getattr(tensor, "data_location", None) == TensorProto.EXTERNAL:
                    return None
                if _size(tensor.shape) > _MAX_UNIFORM_ELEMENTS:
                    return None
                flat = np.asarray(tensor.values).reshape(-1)
                if flat.size == 0 or not _is_number(flat):
                    return None
                flat = flat.astype(np.float32)
                return flat[0] if np.all(flat.view(np.uint32) == flat[:1].view(np.uint32)) else None
            node = self.producer(tensor)
            if node is None or not is_default_domain(node):
                return None
            if node.op == "ConstantOfShape":
                fill = node.attrs.get("value")
                if fill is None:
                    return np.float32(0)
                v = np.asarray(fill.values).reshape(-1)
                return np.float32(v[0]) if v.size == 1 and _is_number(v) else None
            if node.op in ("Expand", *VIEW_OPS) and node.inputs:
                tensor = node.inputs[0]
                continue
            return None
        return None

    def is_scalar(self, tensor, target: float) -> bool:
        value = self.uniform(tensor)
        return value is not None and float(value) == target

    def is_one(self, tensor) -> bool:
        """``tensor`` is a constant whose every element is exactly 1 in its own dtype (after any
        Cast / CastLike that forms it; through Expand and view ops): a Mul by it is the identity.
        Unlike :meth:`uniform` (float32), a float64 1 + 2^-52 is not 1."""
        if not self.is_scalar(tensor, 1.0):
            return False
        for _ in range(8):
            value = self.const(tensor)
            if value is None and isinstance(tensor, gs.Constant) and getattr(tensor, "data_location", None) \
                    != TensorProto.EXTERNAL:
                value = np.asarray(tensor.values)
            if value is not None:
                return _all_exactly_one(value)
            node = self.producer(tensor)
            if node is None or not is_default_domain(node):
                return False
            if node.op == "ConstantOfShape":
                fill = node.attrs.get("value")
                return fill is not None and _all_exactly_one(np.asarray(fill.values))
            if node.op in ("Expand", *VIEW_OPS) and node.inputs:
                tensor = node.inputs[0]
                continue
            return False
        return False

    # -- identity-like wrappers -----------------------------------------------------------
    def may_read_from(self, node, ops) -> bool:
        """Could one of ``node``'s inputs, looked through by :meth:`strip`, be made by an op of
        ``ops``? False only when no input's producer is of ``ops`` or of the ops strip() looks
        through: a pattern's cheap first test, answered for a :class:`ProtoGraph`'s node from its
        index (the node is not linked for it)."""
        if self._by_name and type(node) is self._node_type:
            graph = self.graph
            producers, op_of = graph.producers, graph.op_of
            for name in graph.input_names(node.index):
                at = producers.get(name) if name else None
                if at is not None:
                    op = op_of[at if type(at) is int else at[0]]
                    if op in ops or op in _STRIPPED_OPS:
                        return True
            return False
        return any(t.inputs and (t.inputs[0].op in ops or t.inputs[0].op in _STRIPPED_OPS) for t in node.inputs)

    def strip(self, tensor):
        """Look through Identity and Mul-by-1 (a constant exactly 1, :meth:`is_one`, that does not
        broadcast): the tensor itself. Memoized per tensor (the result holds the same values
        whatever edits follow)."""
        if tensor is None or not tensor.inputs or tensor.inputs[0].op not in _STRIPPED_OPS:
            return tensor
        hit = self._strip_cache.get(id(tensor))
        if hit is not None:
            return hit[1]
        value = self._strip(tensor)
        self._strip_cache[id(tensor)] = (tensor, value)
        return value

    def _strip(self, tensor):
        for _ in range(16):
            if tensor is None or not tensor.inputs:
                return tensor
            node = tensor.inputs[0]
            if node.domain not in DEFAULT_DOMAINS:
                return tensor
            if node.op == "Identity":
                tensor = node.inputs[0]
            elif node.op == "Mul" and len(node.inputs) == 2:
                a, b = node.inputs
                if self.is_one(b) and self.const(a) is None and _same_shape_or_scalar(a, b):
                    tensor = a
                elif self.is_one(a) and self.const(b) is None and _same_shape_or_scalar(b, a):
                    tensor = b
                else:
                    return tensor
            else:
                return tensor
        return tensor

    def value_key(self, tensor):
        """A key equal for tensors that provably hold the same values: the same tensor (through
        Identity / Mul-by-1), or the same Cast of such tensors (exporters without CSE write one
        Cast per use)."""
        tensor = self.strip(tensor)
        node = self.producer_op(tensor, "Cast")
        if node is not None and node.inputs:
            return ("Cast", node.attrs.get("to"), self.value_key(node.inputs[0]))
        return id(tensor)

    def view_source(self, tensor):
        """``tensor`` with value-preserving view ops (Reshape, Flatten, Squeeze, Unsqueeze,
        Identity) and Mul-by-1 (:meth:`strip`) stripped: the tensor holding the same elements
        before any reshaping (an unoptimised PyTorch export writes ``Mul(Elu(..), CastLike(1))``)."""
        for _ in range(16):
            tensor = self.strip(tensor)
            node = self.producer_op(tensor, *VIEW_OPS)
            if node is None or not node.inputs:
                return tensor
            tensor = node.inputs[0]
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
        users = self.consumers(tensor)
        if tensor.name in self.output_names or len(users) != 1 or len(tensor.outputs) != 1:
            return None
        node = users[0]
        if node.op != "Cast" or not is_default_domain(node) or not self.is_local(node):
            return None
        to = node.attrs.get("to")
        return (node, to) if to in LOW_PRECISION else None

    # -- types ----------------------------------------------------------------------------
    def elem_type(self, tensor) -> int | None:
        """ONNX element type of ``tensor`` from metadata, producers, or (lazily) shape inference.

        Walks up through type-preserving producers. Every tensor on a walk has the walk's result
        (resolved or not), so all of them are memoized: over a whole graph the walks stay linear.
        A :class:`ProtoGraph`'s tensors are walked by name on its index (no node or tensor
        objects for the nodes walked through).
        """
        if self._by_name and self.graph.owns(tensor):
            start, cache, by_id, step = tensor.name, self._elem_by_name, False, self._elem_step_by_name
        else:
            start, cache, by_id, step = tensor, self._elem_cache, True, self._elem_step
        hit = cache.get(id(start) if by_id else start)
        if hit is not None:
            return hit[1] if hit[1] is not _UNRESOLVED else self._inferred_elem(start, cache, by_id)
        return self._walk_elem(start, cache, by_id, step)

    def _walk_elem(self, start, cache: dict, by_id: bool, step) -> int | None:
        """The element type walk from ``start`` (a tensor, memoized by id when ``by_id``, or a
        name); ``step`` says what its producer tells: ``(elem, decided, next)``, where ``next``
        continues the walk."""
        x, path, seen, elem, decided = start, [], set(), None, False
        while True:
            k = id(x) if by_id else x
            if x is not start:
                hit = cache.get(k)
                if hit is not None:
                    # a tensor whose walk was unresolved ends this walk unresolved too
                    elem, decided = (hit[1], True) if hit[2] else (None, False)
                    break
            if k in seen:  # a cycle (only in a malformed graph): unresolved
                break
            seen.add(k)
            path.append(x)
            elem, decided, x = step(x)
            if x is None:
                break
        if elem or decided:
            for t in path:
                cache[id(t) if by_id else t] = (t, elem, True)
            return elem
        # unresolved, and so is the walk of every tensor on the path (it is this walk's tail):
        # each asks shape inference for itself when asked
        for t in path:
            cache[id(t) if by_id else t] = (t, _UNRESOLVED, False)
        return self._inferred_elem(start, cache, by_id)

    def _inferred_elem(self, start, cache: dict, by_id: bool) -> int | None:
        elem = _inference(self._model).get(start.name if by_id else start)[0]
        cache[id(start) if by_id else start] = (start, elem, False)
        return elem

    def _elem_step(self, tensor) -> tuple:
        """:meth:`_walk_elem`'s step on a graphsurgeon tensor."""
        dtype = tensor.dtype
        if dtype is not None:
            elem = _elem_of(dtype)
            if elem:
                return elem, False, None
        producers = tensor.inputs
        if not producers:
            return (self.input_types[tensor.name], True, None) if tensor.name in self.input_types else _STOP
        node = producers[0]
        if node.domain not in DEFAULT_DOMAINS:
            return _STOP
        return self._elem_of_producer(node.op, node.inputs, lambda: node)

    def _elem_step_by_name(self, name: str) -> tuple:
        """:meth:`_walk_elem`'s step on a :class:`ProtoGraph`'s tensor name."""
        graph = self.graph
        if graph.has_info(name):
            dtype = graph.tensor(name).dtype
            if dtype is not None:
                elem = _elem_of(dtype)
                if elem:
                    return elem, False, None
        i = graph.first_producer(name)
        if i is None:
            return (self.input_types[name], True, None) if name in self.input_types else _STOP
        if graph.domain_of.get(i) not in DEFAULT_DOMAINS:
            return _STOP
        return self._elem_of_producer(graph.op_of[i], graph.input_names(i), lambda: graph.node(i))

    def _elem_of_producer(self, op: str, operands: list, node) -> tuple:
        """What a (default-domain) producer says of its output's element type: decided by a Cast
        or a Constant (``node()`` gives the node, for its attributes), the type of one of
        ``operands`` (their tensors or names) for a type-preserving op, else unknown."""
        if op == "Cast":
            return node().attrs.get("to"), True, None
        if op == "CastLike":
            return None, False, operands[1]
        if op == "Constant":
            value = self._constant_attr(node())
            return (None if value is None else _elem_of(value.dtype)), True, None
        if op == "Where" and len(operands) == 3:
            return None, False, operands[1]
        if op in _SAME_TYPE_OPS and operands:
            return None, False, operands[0]
        return _STOP

    def dtype_name(self, tensor) -> str | None:
        """'float32' / 'float16' / 'bfloat16' for tensors of those types, else None."""
        return DTYPE_NAMES.get(self.elem_type(tensor))

    def shape(self, tensor) -> tuple | None:
        """Static shape of ``tensor`` (ints, or strings for symbolic dims) from the graph's
        metadata, derived from its producers' inputs (:meth:`local_shape`), or from shape
        inference (run once per model, only when neither says); None when unknown."""
        shape = self.local_shape(tensor)
        if shape is not None:
            return shape
        return _inference(self._model).get(tensor.name)[1]

    def local_shape(self, tensor) -> tuple | None:
        """The shape of ``tensor`` from its metadata, or through elementwise producers (same-shape
        and broadcasting ops) from their inputs'; None when that does not decide it. Memoized
        per tensor (a long chain is walked once, with an explicit stack). A :class:`ProtoGraph`'s
        tensors are walked by name on its index (no node or tensor objects for the nodes walked
        through: the first walk of a graph without value infos goes up the whole chain)."""
        if self._by_name and self.graph.owns(tensor):
            hit = self._shape_by_name.get(tensor.name)
            return hit[1] if hit is not None else _walk_shape(tensor.name, self._shape_by_name, False,
                                                              self._shape_facts_by_name)
        hit = self._shape_cache.get(id(tensor))
        return hit[1] if hit is not None else _walk_shape(tensor, self._shape_cache, True, self._shape_facts)

    def _shape_facts(self, tensor) -> tuple:
        """``(own shape, operands)`` of a graphsurgeon tensor, for :func:`_walk_shape`."""
        shape = None if tensor.shape is None else _own_shape(tensor)
        if shape is not None or not tensor.inputs:
            return shape, None
        node = tensor.inputs[0]
        outputs = node.outputs
        return None, _shape_operands(node.op, node.domain, node.inputs, bool(outputs) and outputs[0] is tensor)

    def _shape_facts_by_name(self, name: str) -> tuple:
        """:meth:`_shape_facts` of a :class:`ProtoGraph`'s tensor name, from its index (its lookups
        written out: the first walk in a graph without value infos goes up a whole chain)."""
        graph = self.graph
        if name and name in graph.infos:
            t = graph.tensor(name)
            if t.shape is not None:
                shape = _own_shape(t)
                if shape is not None:
                    return shape, None
        at = graph.producers.get(name) if name else None
        if at is None:
            return None, None
        i = at if type(at) is int else at[0]
        return None, _shape_operands(graph.op_of[i], graph.domain_of.get(i), graph.input_names(i),
                                     graph.first_output_name(i) == name)


_STOP = (None, False, None)  # GraphView._walk_elem: the walk ends here, undecided


def _walk_shape(start, cache: dict, by_id: bool, facts) -> tuple | None:
    """:meth:`GraphView.local_shape`'s walk from ``start`` (not memoized yet: a tensor, memoized
    by id when ``by_id``, or a name), with an explicit stack; ``facts`` gives a tensor's own shape and the
    operands whose shapes decide it. Every tensor reached is memoized."""
    stack = [start]
    expanded: dict = {}  # key -> the operands whose shapes decide it (once pushed)
    while stack:
        x = stack[-1]
        k = id(x) if by_id else x
        if k in cache:
            stack.pop()
            continue
        operands = expanded.get(k)
        if operands is None:  # first visit
            shape, operands = facts(x)
            if operands is None:
                cache[k] = (x, shape)
                stack.pop()
                continue
        shapes, pending = [], []
        for u in operands:
            h = cache.get(id(u) if by_id else u)
            if h is None:
                pending.append(u)
            else:
                shapes.append(h[1])
        if pending and k not in expanded:  # pending on a second visit: a cycle
            expanded[k] = operands
            stack.extend(pending)
            continue
        cache[k] = (x, _broadcast_shapes(shapes) if not pending and None not in shapes else None)
        stack.pop()
    return cache[id(start) if by_id else start][1]


def _shape_operands(op: str, domain, operands: list, first_output: bool) -> list | None:
    """The operands whose shapes give the output of a node (``first_output``: the tensor asked
    about is its first output) when it is elementwise: same-shape (the first) or broadcasting
    (all), or None."""
    unary = op in _SAME_SHAPE_OPS
    if operands and (unary or op in _BROADCAST_OPS) and domain in DEFAULT_DOMAINS and first_output:
        return operands[:1] if unary else operands
    return None


def _own_shape(tensor) -> tuple | None:
    """A tensor's static shape from its own metadata (a constant's from its value)."""
    shape = tensor.shape
    if shape is None:
        return None
    if isinstance(tensor, gs.Constant):
        return tuple(int(d) for d in shape)
    if any(d is None for d in shape):
        return None
    return tuple(d if isinstance(d, int) else str(d) for d in shape)


def _broadcast_shapes(shapes: list[tuple]) -> tuple | None:
    """ONNX multidirectional broadcasting of static shapes; None where only the values could
    decide (a symbolic dim against a different dim that is not 1)."""
    first = shapes[0]
    for s in shapes:
        if s != first:
            break
    else:
        return first
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dim = None
        for s in shapes:
            j = i - rank + len(s)
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                dim = 1 if dim is None else dim
            elif dim is None or dim == 1:
                dim = d
            elif dim != d:
                return None
        out.append(dim)
    return tuple(out)


class Inferred:
    """ONNX shape inference's ``name -> (elem type or None, shape or None)`` for one model.
    The value infos are indexed by name once; each is converted only when asked for (a rule asks
    about a few tensors per site, the model may have hundreds of thousands)."""

    def __init__(self, graph: onnx.GraphProto | None):
        self._infos: dict[str, onnx.ValueInfoProto] = {}
        if graph is not None:
            for field in (graph.input, graph.value_info, graph.output):  # later entries win
                for vi in field:
                    self._infos[vi.name] = vi
        self._graph = graph  # keeps the protos alive
        self._memo: dict[str, tuple[int | None, tuple | None]] = {}

    def get(self, name: str) -> tuple[int | None, tuple | None]:
        hit = self._memo.get(name)
        if hit is None:
            vi = self._infos.get(name)
            hit = self._memo[name] = (None, None) if vi is None else _type_and_shape(vi)
        return hit


def _type_and_shape(vi: onnx.ValueInfoProto) -> tuple[int | None, tuple | None]:
    t = vi.type.tensor_type
    elem = t.elem_type or None
    if not t.HasField("shape"):
        return elem, None
    dims = []
    for d in t.shape.dim:
        which = d.WhichOneof("value")
        if which == "dim_value":
            dims.append(d.dim_value)
        elif which == "dim_param" and d.dim_param:
            dims.append(d.dim_param)
        else:  # an unknown dim: the shape is not static
            return elem, None
    return elem, tuple(dims)


_NOTHING_INFERRED = Inferred(None)
_INFERENCE_CACHE: dict[int, tuple[object, Inferred]] = {}


def forget_inference() -> None:
    """Drop the kept shape inference result (and the model it holds) once a pass is done."""
    _INFERENCE_CACHE.clear()


def _inference(model: onnx.ModelProto | None) -> Inferred:
    """ONNX shape inference of ``model`` (run once per model object; the last one is kept)."""
    if model is None:
        return _NOTHING_INFERRED
    hit = _INFERENCE_CACHE.get(id(model))
    if hit is not None and hit[0] is model:
        return hit[1]
    try:
        inferred = Inferred(onnx.shape_inference.infer_shapes(model, strict_mode=False).graph)
    except Exception:
        inferred = _NOTHING_INFERRED
    _INFERENCE_CACHE.clear()
    _INFERENCE_CACHE[id(model)] = (model, inferred)
    return inferred


def _same_shape_or_scalar(tensor, one) -> bool:
    """Mul(tensor, 1) keeps ``tensor``'s shape when the 1 is a scalar or has no more dims."""
    s = one.shape
    return s is None or len(s) == 0 or all(d == 1 for d in s) and (tensor.shape is None or len(s) <= len(tensor.shape))


def _all_exactly_one(value: np.ndarray) -> bool:
    """Every element is 1 exactly (compared in float64, which holds every narrower float exactly)."""
    if value.size == 0 or not _is_number(value) or value.dtype.kind == "c":
        return False
    with np.errstate(all="ignore"):
        return bool(np.all(value.astype(np.float64) == 1.0))


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


@functools.lru_cache(maxsize=1024)
def shortest(value: float) -> float:
    """A float32 attribute value as the exporter wrote it: the shortest decimal that rounds to
    it (0.3, not 0.30000001192092896)."""
    return float(str(np.float32(value)))
