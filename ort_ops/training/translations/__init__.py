"""The toolkit's ONNX translations of aten ops that torch 2.13's ONNX exporter lacks (or gets wrong).

One module per op family, each with a ``TRANSLATIONS`` dict (``aten overload -> onnxscript
function``) and optionally ``check_supported(graph, root)`` (raise ``ValueError`` before export
for a variant it cannot translate, naming the aten op, the module path and the way around it).
:data:`MODULES` is the one list; :data:`CUSTOM_TRANSLATION_TABLE` (what
``torch.onnx.export(..., custom_translation_table=...)`` takes) is assembled from it, an op
translated twice being an error. A new translation is one module + one entry of :data:`MODULES`.

The functions are traced by the exporter with onnxscript (and run eagerly by onnxscript's
evaluator in the tests); they need static shapes, the default of
:func:`ort_ops.training.export_training_graph`.
"""

from __future__ import annotations

import re

import torch

from ort_ops.training.translations import (
    adaptive_avg_pool3d,
    adaptive_avg_pool_backward,
    avg_pool,
    avg_pool_backward,
    batch_norm,
    conv_backward,
    empty_permuted,
    layer_norm,
)
from ort_ops.training.translations.nodes import module_path, module_paths

__all__ = ["CUSTOM_TRANSLATION_TABLE", "MODULES", "check_supported", "module_path", "module_paths", "untranslated_hint"]

#: every translation module, in no particular order (each op belongs to exactly one)
MODULES = (conv_backward, avg_pool, avg_pool_backward, adaptive_avg_pool_backward, adaptive_avg_pool3d, batch_norm,
           layer_norm, empty_permuted)


def _assemble(modules) -> dict:
    table: dict = {}
    for module in modules:
        for target, fn in module.TRANSLATIONS.items():
            if target in table:
                raise ValueError(f"{target} is translated by two modules: {table[target].__module__} "
                                 f"and {module.__name__}")
            table[target] = fn
    return table


#: ``aten overload -> onnxscript function``, from every module of :data:`MODULES`
CUSTOM_TRANSLATION_TABLE = _assemble(MODULES)


def check_supported(graph: torch.fx.Graph, root: str = "", forward: torch.fx.Graph | None = None) -> None:
    """Run every module's ``check_supported(graph, root, forward)`` on the joint graph
    (``ValueError`` on the first variant that cannot be exported); ``forward``: the graph the
    joint one came from, whose nodes know their modules (for the message)."""
    for module in MODULES:
        check = getattr(module, "check_supported", None)
        if check is not None:
            check(graph, root, forward)


_NO_FUNCTION = re.compile(r"No ONNX function found for <OpOverload\(op='([\w.]+)', overload='(\w+)'\)>")


def untranslated_hint(cause: str, graphs, root: str = "") -> str:
    """For the exporter's ``No ONNX function found for <OpOverload(op='aten.x', ...)>``: the
    modules whose nodes are that op and the ways around it ('' for any other message)."""
    match = _NO_FUNCTION.search(cause)
    if match is None:
        return ""
    name = f"{match.group(1)}.{match.group(2)}"
    paths = module_paths(name, graphs, root)
    where = f" (in module {', '.join(paths)})" if paths else ""
    return (f"{where}. Neither torch's exporter nor ort_ops.training.translations translates {name}: replace "
            "the module by one whose ops export (see docs/bring-your-own-model.md), freeze it "
            "(requires_grad=False and no gradient through it), or add a translation module to "
            "ort_ops.training.translations")
