"""Where an fx node of an exported program came from, for error messages."""

from __future__ import annotations

from collections.abc import Iterable

import torch


def module_path(node: torch.fx.Node, root: str = "") -> str:
    """The module that made ``node``: its dotted path below ``root`` and its class name, e.g.
    ``head.pool (AvgPool2d)``; ``<model>`` for the root module itself, ``""`` when the node does
    not say (the joint forward/backward graph's nodes have an empty module stack)."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path, cls = list(stack.values())[-1]
    if root and (path == root or path.startswith(root + ".")):
        path = path[len(root) + 1:]
    name = getattr(cls, "__name__", None) or str(cls).rsplit(".", 1)[-1].rstrip("'>")
    return f"{path or '<model>'} ({name})"


def module_paths(op_name: str, graphs: Iterable[torch.fx.Graph], root: str = "") -> list[str]:
    """The modules of the nodes that call ``op_name`` (e.g. ``aten.avg_pool2d_backward.default``)
    or, for a backward op, its forward (``aten.avg_pool2d.default``), in any of ``graphs``."""
    forward = op_name.replace("_backward.", ".")
    found = set()
    for graph in graphs:
        for node in graph.nodes:
            if node.op == "call_function" and str(node.target) in (op_name, forward):
                path = module_path(node, root)
                if path:
                    found.add(path)
    return sorted(found)
