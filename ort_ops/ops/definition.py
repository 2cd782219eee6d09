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

from ort_ops.domain import DOMAIN, OPSET_VERSION
from ort_ops.dtypes import FLOAT_TYPES


@dataclass(frozen=True)
class Tensor:
    name: str
    doc: str


@dataclass(frozen=True)
class Attribute:
    name: str
    default: float
    doc: str
    kind: str = "float"


@dataclass(frozen=True)
class OpDef:
    """One op of the ``ai.ortops`` domain.

    ``reference(*inputs, **attributes)`` is the NumPy definition of its results (bit for bit
    what every kernel computes). ``shape``: how outputs relate to inputs; ``"elementwise"``:
    every input has one dtype and one shape (no broadcasting), output 0 has it too.
    ``providers``: the execution providers with a kernel.
    """

    name: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    attributes: tuple[Attribute, ...]
    reference: Callable
    doc: str
    dtypes: tuple[str, ...] = FLOAT_TYPES
    shape: str = "elementwise"
    providers: tuple[str, ...] = ("CPUExecutionProvider", "CANNExecutionProvider")
    domain: str = DOMAIN
    since_version: int = OPSET_VERSION
    summary: str = field(default="")
    # attribute sets the contract tests run the op with (besides the defaults)
    examples: tuple[dict, ...] = ()

    def defaults(self) -> dict[str, float]:
        return {a.name: a.default for a in self.attributes}
