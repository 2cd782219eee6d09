"""Reading a two-input node's operands, in either order: what the rules that match spelled-out
arithmetic (the LayerNorm and BatchNorm backward) need of commutative Mul / Add nodes."""

from __future__ import annotations

import onnx_graphsurgeon as gs


def binary_operands(node: gs.Node | None) -> tuple | None:
    """``node``'s two inputs, or None when there is no node or it has not two."""
    return tuple(node.inputs) if node is not None and len(node.inputs) == 2 else None


def split_operands(node: gs.Node | None, pick) -> tuple | None:
    """``(a, b)`` of a two-input node where ``pick(a)`` holds (either order), else None."""
    ops = binary_operands(node)
    if ops is None:
        return None
    for a, b in (ops, ops[::-1]):
        if pick(a):
            return a, b
    return None
