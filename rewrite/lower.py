"""``lower_elu_grad``: replace every ``ai.ortops::EluGrad`` by standard ONNX ops, bit-exact.

float32:  ``Where(Less(a, 0), Mul(g, Add(a, alpha)), g)``.
bfloat16: the same on ``Cast(g/a, to=FLOAT)``, then one ``Cast(.., to=BFLOAT16)``.
float16:  the same, but the ``Cast(.., to=FLOAT16)`` is applied to the product branch only and
          the else branch selects ``g`` itself: ONNX Runtime's float32->float16 Cast quiets
          signalling NaNs (F16C), whereas the kernel returns a NaN ``g`` bit for bit. For every
          non-NaN ``g``, ``Cast(Cast(g, FLOAT), FLOAT16) == g``, so both spellings agree.
ONNX Runtime's CPU Cast rounds to nearest even for both types and matches ml_dtypes' bfloat16
NaN encoding (sign | 0x7fc0), so the lowered graph equals the kernel bit for bit.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops import DOMAIN
from rewrite.fuse import _gc_paused, cleanup, export, import_graph, originally_unused, splice
from rewrite.graph_view import GraphView, node_label
from rewrite.report import RewriteReport, SiteReport


def _has_elu_grad(graph: onnx.GraphProto) -> bool:
    return any(n.op_type == "EluGrad" and n.domain == DOMAIN for n in graph.node)


def lower_elu_grad(
    model: onnx.ModelProto, *, report: RewriteReport | None = None
) -> onnx.ModelProto:
    """A new model in which every ``ai.ortops::EluGrad`` is spelled with standard ONNX ops.

    The ``ai.ortops`` opset import is dropped when no other op of the domain remains.
    Raises ``ValueError`` when an EluGrad's dtype cannot be determined or is unsupported.
    """
    report = report if report is not None else RewriteReport()
    report.pass_name = "lower"
    if not _has_elu_grad(model.graph):
        out = onnx.ModelProto()
        out.CopyFrom(model)
        return out
    with _gc_paused():
        lowered = _lower(model, report)
    if not any(n.domain == DOMAIN for n in lowered.graph.node) and not any(
        n.domain == DOMAIN for f in lowered.functions for n in f.node
    ):
        keep = [op for op in lowered.opset_import if op.domain != DOMAIN]
        del lowered.opset_import[:]
        lowered.opset_import.extend(keep)
    return lowered


def _lower(model: onnx.ModelProto, report: RewriteReport) -> onnx.ModelProto:
    graph = import_graph(model)
    view = GraphView(graph, model)
    keep_alive = originally_unused(graph, model.graph)
    replaced = {}
    for node in [n for n in graph.nodes if n.op == "EluGrad" and n.domain == DOMAIN]:
        dtype = view.dtype_name(node.inputs[0])
        if dtype is None:
            raise ValueError(
                f"EluGrad {node_label(node)}: grads {node.inputs[0].name} must be float32, "
                f"float16 or bfloat16; its dtype is {view.elem_type(node.inputs[0])}"
            )
        alpha = node.attrs.get("alpha")
        alpha = 1.0 if alpha is None else float(alpha)
        g, a = node.inputs
        (y,) = node.outputs
        node.outputs.clear()
        node.inputs.clear()
        replaced[id(node)] = _lowered(node_label(node), g, a, y, alpha, dtype)
        report.sites.append(SiteReport(
            rule="lower_elu_grad", status="lowered", nodes=[node_label(node)], output=y.name,
            grads=g.name, activations=a.name, dtype=dtype, alpha=alpha, exact=True,
        ))
    new_nodes = splice(graph, replaced)
    missing = cleanup(graph, keep_alive, new_nodes)
    return export(model, graph, missing, add_domain=False)


def _lowered(base: str, g, a, y, alpha: float, dtype: str) -> list[gs.Node]:
    """Nodes computing ``y = a < 0 ? g * (a + alpha) : g`` with EluGrad's numerics."""
    f32 = np.float32
    var = lambda suffix: gs.Variable(f"{base}/{suffix}")  # noqa: E731
    zero = gs.Constant(f"{base}/zero", np.array(0.0, dtype=f32))
    alpha_c = gs.Constant(f"{base}/alpha", np.array(alpha, dtype=f32))
    nodes = []
    if dtype == "float32":
        g32, a32 = g, a
    else:
        g32, a32 = var("grads_f32"), var("activations_f32")
        nodes += [
            gs.Node("Cast", f"{base}/cast_grads", {"to": TensorProto.FLOAT}, [g], [g32]),
            gs.Node("Cast", f"{base}/cast_activations", {"to": TensorProto.FLOAT}, [a], [a32]),
        ]
    mask = gs.Variable(f"{base}/negative")
    t, p = var("shifted"), var("product")
    nodes += [
        gs.Node("Less", f"{base}/less", inputs=[a32, zero], outputs=[mask]),
        gs.Node("Add", f"{base}/add", inputs=[a32, alpha_c], outputs=[t]),
        gs.Node("Mul", f"{base}/mul", inputs=[g32, t], outputs=[p]),
    ]
    if dtype == "float32":
        nodes.append(gs.Node("Where", f"{base}/where", inputs=[mask, p, g], outputs=[y]))
    elif dtype == "float16":
        p16 = gs.Variable(f"{base}/product_f16")
        nodes += [
            gs.Node("Cast", f"{base}/cast_product", {"to": TensorProto.FLOAT16}, [p], [p16]),
            gs.Node("Where", f"{base}/where", inputs=[mask, p16, g], outputs=[y]),
        ]
    else:
        y32 = var("result_f32")
        nodes += [
            gs.Node("Where", f"{base}/where", inputs=[mask, p, g32], outputs=[y32]),
            gs.Node("Cast", f"{base}/cast_result", {"to": TensorProto.BFLOAT16}, [y32], [y]),
        ]
    return nodes
