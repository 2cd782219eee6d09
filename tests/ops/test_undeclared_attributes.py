"""Attributes an op does not declare, for every op of ort_ops.ops: onnx.checker (with the
library's schemas) rejects any of them; the kernels (CPU EP here, CANN in tests/cann) reject, at
session creation, a one-typo spelling of each declared attribute, naming it. ORT's C API cannot
list a node's attributes, so the kernels probe likely names only (common/attribute_check.h)."""

from __future__ import annotations

import onnx
import pytest
from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidArgument, InvalidGraph, RuntimeException

from op_helpers import make_session
from ort_ops import schemas
from ort_ops.model_builder import make_op_model
from ort_ops.ops import OPS

ORT_ERRORS = (Fail, InvalidArgument, InvalidGraph, RuntimeException)


def model_of(op):
    return make_op_model(op, op.dtypes[0], None if not op.elementwise else (4, 2), name="the_node")


def swapped(name: str) -> str:
    """``name`` with its first two distinct adjacent characters swapped (a typo)."""
    for i in range(len(name) - 1):
        if name[i] != name[i + 1]:
            return name[:i] + name[i + 1] + name[i] + name[i + 2:]
    raise ValueError(name)


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_the_checker_rejects_an_undeclared_attribute(op):
    schemas.register_all()
    model = model_of(op)
    onnx.checker.check_model(model, full_check=True)
    model.graph.node[0].attribute.append(onnx.helper.make_attribute("not_an_attribute_of_the_op", 1))
    with pytest.raises(onnx.checker.ValidationError, match=f"Unrecognized attribute: not_an_attribute_of_the_op "
                                                           f"for operator {op.name}"):
        onnx.checker.check_model(model, full_check=True)


@pytest.mark.parametrize("op, attribute", [(op, a) for op in OPS for a in op.attributes],
                         ids=lambda v: getattr(v, "name", ""))
def test_a_typo_of_a_declared_attribute_fails_session_creation_naming_it(op, attribute):
    model = model_of(op)
    typo = swapped(attribute.name)
    model.graph.node[0].attribute.append(onnx.helper.make_attribute(typo, attribute.default))
    declared = ", ".join(a.name for a in op.attributes)
    with pytest.raises(ORT_ERRORS, match=rf"{op.name}: node 'the_node' has attribute {typo}, which {op.name} does "
                                         rf"not define \(its attributes: {declared}\)"):
        make_session(model)
