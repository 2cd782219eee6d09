"""What a placement rule is: which ONNX op it places on CANN, which CANN ops its kernel launches,
and when it must not (a reason). One module per op family in :mod:`ort_ops.rewrite.placement.ops`, named
like the C++ file of its kernels (``ort_ops/csrc/placed/<family>.cc``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from ort_ops.cann_soc import DEFAULT_ROUTE, placed_launches, placed_routes


@dataclass
class NodeInfo:
    """A node and what the pass knows about its inputs and outputs."""

    node: onnx.NodeProto
    opset: int  # the model's ai.onnx opset
    input_types: list[int | None]  # ONNX elem types ("" inputs: None)
    input_shapes: list[tuple | None]  # static shapes where known (None entries for symbolic dims)
    output_types: list[int | None]
    output_shapes: list[tuple | None]
    constants: list[np.ndarray | None]  # constant input values (initializers, Constant nodes)
    attrs: dict | None = None  # name -> value; None: read from the node when first asked

    def attr(self, name: str, default=None):
        if self.attrs is None:
            self.attrs = {a.name: helper.get_attribute_value(a) for a in self.node.attribute}
        value = self.attrs.get(name, default)
        return value.decode() if isinstance(value, bytes) else value

    def present(self, index: int) -> bool:
        return index < len(self.node.input) and self.node.input[index] != ""

    def rank(self, inputs: int = 2) -> int | None:
        """The rank of the first of the first `inputs` inputs whose shape is known (a convolution's X
        and W share it), or None."""
        for shape in self.input_shapes[:inputs]:
            if shape is not None:
                return len(shape)
        return None


# (NodeInfo) -> reason not to place it, or None
Check = Callable[[NodeInfo], "str | None"]


def no_check(info: NodeInfo) -> str | None:
    return None


@dataclass(frozen=True)
class PlaceRule:
    """``op_type`` (ai.onnx) placed as ``ai.ortops.cann::<placed_name(info)>``.

    ``route(info)``: which of the kernel's routes this node takes (default: ``"default"``), or a
    tuple of alternatives in preference order: the first whose CANN ops the SoC has is taken (the
    C++ kernel picks it the same way, ``RouteOnSoc``). The CANN op types each route launches are
    written once, in ``ort_ops/cann_soc_table.json`` "placed" (the C++ kernel reads the same entry),
    and :meth:`cann_ops` gives them (checked against the SoC). ``check``: a reason not to place it.
    ``min_opset``: the ai.onnx opset from which the op has the form the kernel implements.
    ``leave_to_ep``: a reason to leave the node to the CANN EP's own kernel when it has one (e.g.
    arithmetic without broadcasting); without it, a node with a rule is placed even where the EP has
    a kernel (the placed kernels are the ones tested here, and shape ops placed cost no launch). A
    node whose EP kernel has a known defect (:mod:`ort_ops.rewrite.placement.ep_defects`) is placed,
    or the session fails at creation naming it. ``drops_unread_outputs``: outputs after the first that no
    node (in any graph) reads and that are not graph outputs are unnamed when the node is placed, so
    the kernel does not produce them (Dropout's mask: an exporter names it whether or not it is read).
    """

    op_type: str
    check: Check = no_check
    placed_name: Callable[[NodeInfo], str] | None = None
    min_opset: int = 1
    leave_to_ep: Callable[[NodeInfo], str | None] | None = None
    route: Callable[[NodeInfo], str | tuple[str, ...]] | None = None
    drops_unread_outputs: bool = False

    def __post_init__(self):
        if self.op_type not in placed_routes():
            raise KeyError(f"placement rule {self.op_type}: ort_ops/cann_soc_table.json 'placed' has no entry for it "
                           "(the CANN ops its kernel launches)")

    def name_for(self, info: NodeInfo) -> str:
        return self.placed_name(info) if self.placed_name is not None else self.op_type

    def routes(self, info: NodeInfo) -> tuple[str, ...]:
        """The routes this node may take, in preference order (one unless the rule gives alternatives)."""
        route = self.route(info) if self.route is not None else DEFAULT_ROUTE
        return (route,) if isinstance(route, str) else tuple(route)

    def route_on(self, info: NodeInfo, unavailable: Callable[[str], str | None] | None) -> str:
        """The route taken on a SoC (``unavailable(cann_op)``: why the SoC lacks it, or None): the first
        alternative whose CANN ops it has, else the first (None: no SoC limits, the first)."""
        routes = self.routes(info)
        if unavailable is not None:
            for route in routes:
                if all(unavailable(op) is None for op in placed_launches(self.op_type, route)):
                    return route
        return routes[0]

    def cann_ops(self, info: NodeInfo, route: str | None = None) -> tuple[str, ...]:
        """The CANN op types the kernel launches for this node on ``route`` (default: its first)."""
        return placed_launches(self.op_type, route if route is not None else self.routes(info)[0])
