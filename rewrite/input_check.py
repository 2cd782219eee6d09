"""The input model checked before it is rewritten, and the one input defect ``fuse`` can mend.

:func:`check_input` runs ``onnx.checker`` with ``full_check`` (types and shapes) on the input, so
a defect of the input is reported as the input's, not as the rewritten model's. An exporter can
write a graph that ONNX rejects: ``torch.onnx.export`` of a bfloat16 model writes its ELU as an
``Elu`` of bfloat16, a type ONNX's Elu has only from opset 22 (and ONNX Runtime's CPU kernel not
at all). :func:`wrap_elus_in_float32` computes such Elus in float32 between Casts (the 16-bit
tensor upcast, the float32 result rounded once: what PyTorch's bfloat16 ELU computes), the form
of an fp32 ELU in a 16-bit model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import onnx
from onnx import TensorProto, helper

from ort_ops.rewrite.model_io import external_tensors

ELU_FLOAT32_OPTION = "--elu-in-float32"  # the CLI option that applies wrap_elus_in_float32


@dataclass
class InputProblem:
    """Why the input is invalid ONNX: the checker's first line, and the Elu nodes whose input type
    their opset's Elu does not take (``(node name, tensor, dtype name, opset)``)."""

    checker: str
    elus: list[tuple[str, str, str, int]] = field(default_factory=list)
    only_elus: bool = False  # the input passes the checker once those Elus compute in float32

    def message(self, path: str, option_given: bool = False) -> str:
        what = f"the input model {path} is invalid ONNX (onnx.checker: {self.checker})"
        if not self.elus:
            return what
        name, tensor, dtype, opset = self.elus[0]
        more = f" (and {len(self.elus) - 1} more Elu node(s) like it)" if len(self.elus) > 1 else ""
        why = (f"{what}: node {name!r} (Elu) reads {dtype} {tensor!r}{more}, and ONNX's Elu takes {dtype} only "
               f"from opset 22 (the model imports opset {opset}; ONNX Runtime's CPU Elu has no {dtype} kernel)")
        if not self.only_elus:
            return why + "; the model is invalid for other reasons too"
        if option_given:
            return why
        return (why + f"; rerun with {ELU_FLOAT32_OPTION} to compute these Elus in float32 between Casts (what "
                "PyTorch's bfloat16 ELU computes)")


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _default_opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def _elem_types(model: onnx.ModelProto) -> dict[str, int]:
    """Element types of the main graph's values: inputs, initializers, value_info, outputs, and what
    non-strict shape inference adds."""
    graph = model.graph
    types = {t.name: t.data_type for t in graph.initializer}
    for vi in [*graph.input, *graph.value_info, *graph.output]:
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            types[vi.name] = vi.type.tensor_type.elem_type
    if any(n.input and n.input[0] not in types for n in graph.node if n.op_type == "Elu"):
        try:
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        except Exception:
            return types
        for vi in inferred.graph.value_info:
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
                types.setdefault(vi.name, vi.type.tensor_type.elem_type)
    return types


def untyped_elus(model: onnx.ModelProto) -> list[tuple[int, onnx.NodeProto, str]]:
    """``(index, node, dtype name)`` of the main graph's Elu nodes whose input has a float type
    (bfloat16) that the model's opset of Elu does not take."""
    opset = _default_opset(model)
    try:
        schema = onnx.defs.get_schema("Elu", opset)
    except Exception:
        return []
    allowed = {s for c in schema.type_constraints for s in c.allowed_type_strs}
    types = _elem_types(model)
    found = []
    for i, node in enumerate(model.graph.node):
        if node.op_type != "Elu" or node.domain not in ("", "ai.onnx") or not node.input:
            continue
        elem = types.get(node.input[0])
        if elem == TensorProto.BFLOAT16 and "tensor(bfloat16)" not in allowed:
            found.append((i, node, "bfloat16"))
    return found


def check_input(path: str, model: onnx.ModelProto) -> InputProblem | None:
    """None if the input at ``path`` passes ``onnx.checker`` with ``full_check``; else what is wrong
    and whether :func:`wrap_elus_in_float32` mends it."""
    try:
        onnx.checker.check_model(path, full_check=True)
        return None
    except Exception as exc:
        problem = InputProblem(_first_line(exc))
    elus = untyped_elus(model)
    opset = _default_opset(model)
    problem.elus = [(n.name or f"Elu #{i}", n.input[0], dtype, opset) for i, n, dtype in elus]
    if elus and external_tensors(model):
        problem.only_elus = True  # not checked here (its data is not loaded): the output is checked
    elif elus:
        try:
            onnx.checker.check_model(wrap_elus_in_float32(model), full_check=True)
            problem.only_elus = True
        except Exception:
            problem.only_elus = False
    return problem


def wrap_elus_in_float32(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` whose :func:`untyped_elus` compute in float32: ``Y = Cast(Elu(Cast(X,
    to=FLOAT)), to=<X's type>)``, the Elu keeping its name and attributes, ``Y`` its name (its
    readers, an EluGrad among them, are unchanged)."""
    targets = {i: dtype for i, _, dtype in untyped_elus(model)}
    out = onnx.ModelProto()
    out.CopyFrom(model)
    if not targets:
        return out
    taken = {v for n in model.graph.node for v in [*n.input, *n.output]}
    taken |= {v.name for v in [*model.graph.input, *model.graph.output, *model.graph.initializer]}

    def fresh(base: str) -> str:
        name, k = base, 1
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        return name

    nodes = []
    for i, node in enumerate(model.graph.node):  # copied from the input: out's are replaced below
        if i not in targets:
            nodes.append(node)
            continue
        x, y = node.input[0], node.output[0]
        x32, y32 = fresh(f"{x}/float32"), fresh(f"{y}/float32")
        back = getattr(TensorProto, targets[i].upper())
        label = node.name or y
        elu = onnx.NodeProto()
        elu.CopyFrom(node)
        elu.input[0], elu.output[0] = x32, y32
        nodes += [helper.make_node("Cast", [x], [x32], name=fresh(f"{label}/to_float32"), to=TensorProto.FLOAT),
                  elu,
                  helper.make_node("Cast", [y32], [y], name=fresh(f"{label}/from_float32"), to=back)]
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out
