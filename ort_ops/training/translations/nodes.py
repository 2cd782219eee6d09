"""Where an fx node of an exported program came from, for error messages."""

from __future__ import annotations

import torch


def module_path(node: torch.fx.Node, root: str = "") -> str:
    """The module that made ``node``: its dotted path below ``root`` and its class name, e.g.
    ``head.pool (AvgPool2d)``; ``<model>`` for the root module itself."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return "<model>"
    path, cls = list(stack.values())[-1]
    if root and (path == root or path.startswith(root + ".")):
        path = path[len(root) + 1:]
    name = getattr(cls, "__name__", None) or str(cls).rsplit(".", 1)[-1].rstrip("'>")
    return f"{path or '<model>'} ({name})"
