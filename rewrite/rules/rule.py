"""What a rule is and what it produces.

A rule is one small module with a ``pattern`` (does this anchor node start the structure? returns
a :class:`Site` with the captured pieces, or None), a ``check`` (returns the reason the site
must not be fused, or None, after filling in what the fused op gets, its dtype and the semantic
notes), a ``replacement`` (the new nodes, built from the site alone) and ``needs``: the op types
a graph must contain for the pattern to be able to match (the protobuf pre-filter is built from
them, :func:`ort_ops.rewrite.fuse.has_candidates`). What a rule captures is its own
(``Site.caps``, or a :class:`Site` subclass of its family: the ELU rules'
:class:`ort_ops.rewrite.rules.base.EluSite`); the driver reads only the fields below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import onnx_graphsurgeon as gs

from ort_ops.rewrite.graph_view import GraphView


@dataclass
class Site:
    """One candidate site: what a rule captured, and what the driver needs to replace it."""

    rule: str
    root: gs.Node  # the node whose output the fused op produces (before any Cast back)
    nodes: list = field(default_factory=list)  # nodes of the pattern (report)
    output: gs.Variable | None = None  # the tensor the fused op will produce (name kept)
    dtype: str | None = None
    exact: bool = True  # bit-identical to the original for every input
    notes: list[str] = field(default_factory=list)
    caps: dict = field(default_factory=dict)  # rule-private captures
    op: str = ""  # the ai.ortops op the site becomes
    # further tensors the op produces (their producers are replaced too), e.g. a loss with its gradient
    outputs: list = field(default_factory=list)
    # nodes of the pattern whose outputs nothing read before the rewrite: they may go with the pattern
    drops: list = field(default_factory=list)
    attributes: dict = field(default_factory=dict)  # the op's attributes, for the report
    forward: gs.Node | None = None  # the layer's forward node (its metadata names the layer in the report)
    # the tensors the report names, by role: "grads" (the upstream gradient the op reads) and
    # "activations" (the forward tensor it reads)
    operands: dict = field(default_factory=dict)

    def report_fields(self, fused: bool) -> dict:
        """The op-specific fields of the site's :class:`SiteReport`."""
        return {role: name_of(self.operands.get(role)) for role in ("grads", "activations")}


def name_of(tensor) -> str | None:
    return None if tensor is None else tensor.name


@dataclass(frozen=True)
class Rule:
    name: str
    anchor: str  # op type of the node ``pattern`` is tried on
    pattern: Callable[[GraphView, gs.Node], Site | None]
    check: Callable[[GraphView, Site], str | None]
    replacement: Callable[[GraphView, Site, str], list]  # (view, site, name of the new op) -> new nodes
    # groups of op types: a graph can hold a site only if it has an op of every group
    needs: tuple[frozenset[str], ...] = ()
    doc: str = ""

    def could_match(self, op_types: set[str]) -> bool:
        return self.anchor in op_types and all(group & op_types for group in self.needs)


def needs(*groups) -> tuple[frozenset[str], ...]:
    return tuple(frozenset((g,) if isinstance(g, str) else g) for g in groups)


__all__ = ["Rule", "Site", "needs"]
