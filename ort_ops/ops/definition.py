"""What an op of the library is, in one place: :class:`OpDef`.

An op's module in :mod:`ort_ops.ops` defines ``OP = OpDef(...)``; from it come the ONNX schema
(:mod:`ort_ops.schemas`), the ``onnx.reference`` op (:mod:`ort_ops.reference`), one-node test
models (:mod:`ort_ops.model_builder`), the docs table (``docs/ops/<Op>.md``, checked by
``tests/ops/test_contract.py``), the contract tests, and the check that the compiled library
registers exactly these kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ort_ops import dtypes as _dtypes
from ort_ops.domain import DOMAIN, OPSET_VERSION
from ort_ops.dtypes import FLOAT_TYPES

#: The type constraint every elementwise op uses, and the default of :attr:`Tensor.type`.
T = "T"


@dataclass(frozen=True)
class Tensor:
    """An input or output. ``type``: the name of one of the op's type constraints (``"T"``) or a
    fixed dtype name (``"float64"``, ``"int64"``). ``optional``: may be omitted (inputs) or
    left unused (outputs). ``host``: (inputs only) the kernels read it in CPU memory (shapes,
    axes), so ORT keeps it on the host on every EP."""

    name: str
    doc: str
    type: str = T
    optional: bool = False
    host: bool = False


ATTRIBUTE_KINDS = ("float", "int", "string", "ints", "floats")


@dataclass(frozen=True)
class Attribute:
    """An attribute: ``kind`` one of :data:`ATTRIBUTE_KINDS`; ``default`` its value when absent."""

    name: str
    default: object
    doc: str
    kind: str = "float"

    def __post_init__(self):
        if self.kind not in ATTRIBUTE_KINDS:
            raise ValueError(f"attribute {self.name}: kind {self.kind!r} is not one of {ATTRIBUTE_KINDS}")

    def coerce(self, value):
        """``value`` as this attribute's Python type (what ``onnx.helper.make_attribute`` writes)."""
        if self.kind == "float":
            return float(value)
        if self.kind == "int":
            return int(value)
        if self.kind == "string":
            return str(value)
        if self.kind == "ints":
            return [int(v) for v in value]
        return [float(v) for v in value]


ShapeRule = Callable[[list[tuple[int, ...]], dict], list[tuple[int, ...]]]
SampleInputs = Callable[[str, dict, np.random.Generator], list[np.ndarray]]


@dataclass(frozen=True)
class OpDef:
    """One op of the ``ai.ortops`` domain.

    ``reference(*inputs, **attributes)`` is the NumPy definition of its results: an array, or a
    tuple of arrays for several outputs. With ``exact`` every kernel matches it bit for bit;
    otherwise within :mod:`ort_ops.tolerances` (the op's docs say why).

    ``shape``: ``"elementwise"`` (every input has one dtype and one shape, no broadcasting, output
    0 has them), or a function ``(input shapes, attributes) -> output shapes`` that raises
    ``ValueError`` naming the inputs whose shapes do not fit. ``sample_inputs(dtype, attributes,
    rng)``: inputs the contract tests run the op on (required unless elementwise). ``None``
    stands for an omitted optional input (in shapes and sample inputs) and for an optional output
    the node does not produce (in output shapes and the reference's results).

    ``dtypes``: the dtypes of ``"T"``, the ones the kernels are registered for (one kernel per
    dtype and EP). ``providers``: the execution providers with a kernel. ``foreign_attributes``:
    attribute names of the ops this one mirrors (e.g. ONNX MaxPool's ``dilations``) that the
    kernels reject by name at session creation instead of ignoring them
    (``ort_ops/csrc/common/attribute_check.h``).

    This declaration is the only place these facts are written: the build generates the C++
    registration and I/O specs from ``name``, ``inputs``, ``outputs``, ``attributes``, ``dtypes``,
    ``providers`` and ``foreign_attributes`` (``scripts/gen_op_declarations.py``, which reads the
    module with ``ast``: those fields must be literals or module constants, CONTRIBUTING.md).
    """

    name: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    attributes: tuple[Attribute, ...]
    reference: Callable
    doc: str
    dtypes: tuple[str, ...] = FLOAT_TYPES
    shape: str | ShapeRule = "elementwise"
    sample_inputs: SampleInputs | None = None
    exact: bool = True
    providers: tuple[str, ...] = ("CPUExecutionProvider", "CANNExecutionProvider")
    domain: str = DOMAIN
    since_version: int = OPSET_VERSION
    summary: str = field(default="")
    # attribute sets the contract tests run the op with (besides the defaults)
    examples: tuple[dict, ...] = ()
    foreign_attributes: tuple[str, ...] = ()

    def __post_init__(self):
        if self.shape != "elementwise" and not callable(self.shape):
            raise ValueError(f"{self.name}: shape must be 'elementwise' or a function, got {self.shape!r}")
        if self.shape != "elementwise" and self.sample_inputs is None:
            raise ValueError(f"{self.name}: an op that is not elementwise needs sample_inputs")
        for t in (*self.inputs, *self.outputs):
            if t.type != T and t.type not in _dtypes.TYPES:
                raise ValueError(f"{self.name}: {t.name} has type {t.type!r}: neither 'T' nor a dtype name")
        for t in self.outputs:
            if t.host:
                raise ValueError(f"{self.name}: output {t.name} is declared host: host memory is for inputs only")

    @property
    def elementwise(self) -> bool:
        return self.shape == "elementwise"

    def defaults(self) -> dict:
        return {a.name: a.default for a in self.attributes}

    def attribute(self, name: str) -> Attribute:
        for a in self.attributes:
            if a.name == name:
                return a
        raise KeyError(f"{self.name} has no attribute {name!r} (it has {[a.name for a in self.attributes]})")

    def dtype_of(self, tensor: Tensor, dtype: str) -> str:
        """The dtype of ``tensor`` when ``T`` is ``dtype``."""
        return dtype if tensor.type == T else tensor.type

    def output_shapes(self, shapes: list[tuple[int, ...]], attributes: dict) -> list[tuple[int, ...]]:
        """Output shapes for input shapes (``ValueError`` if they do not fit)."""
        if self.elementwise:
            first = tuple(shapes[0])
            for t, s in zip(self.inputs[1:], shapes[1:]):
                if tuple(s) != first:
                    raise ValueError(f"{self.name}: {self.inputs[0].name} shape {list(first)} differs from "
                                     f"{t.name} shape {list(s)}")
            return [first] * len(self.outputs)
        # None: an omitted optional input, or an output the attributes leave unused
        given = [None if s is None else tuple(s) for s in shapes]
        return [None if s is None else tuple(s) for s in self.shape(given, {**self.defaults(), **attributes})]

    def outputs_of(self, *inputs, **attributes) -> tuple[np.ndarray, ...]:
        """The reference's results as a tuple, whatever the number of outputs."""
        result = self.reference(*inputs, **{**self.defaults(), **attributes})
        return tuple(result) if isinstance(result, (tuple, list)) else (result,)
