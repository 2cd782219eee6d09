"""Nodes ONNX Runtime computes once, when the session is created, a step of
:func:`ort_ops.rewrite.placement.place`.

ONNX Runtime's constant folding (a basic graph optimisation: it runs before the graph is
partitioned between execution providers, on every node still in the ONNX domain) replaces a node
whose inputs are all constants with an initializer holding its outputs; a ``Shape`` of a tensor
whose shape is static counts as constant. A node the pass placed is in the ``ai.ortops.cann``
domain, which that optimisation does not evaluate: placing a constant node would turn a value
computed once into a launch per run (and, for a node with no kernel on CANN, like ``Range``, a
device-to-host copy, a CPU node and a copy back). So such a node is left in the ONNX domain and
reported ``folded``; so is every node reading only what such nodes produce. Graphs exported with
a fixed input shape spell shapes this way (``Shape`` -> ``Gather`` -> ``Range`` -> ``Cast``), and
so do inference graphs with initializer weights (``Transpose`` of a weight).

Constants are initializers that are not also graph inputs (a graph input of the same name can
replace those at run time) and ``Constant`` nodes' outputs. Left out, so placed or reported as
usual: nodes with bodies, nodes of other domains, and the non-deterministic ops (random
generators, ``Dropout``). Only the main graph is looked at.
"""

from __future__ import annotations

import onnx

_ONNX = ("", "ai.onnx")

# ops whose outputs differ from run to run: never computed once
NON_DETERMINISTIC = frozenset({"RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike",
                               "Multinomial", "Bernoulli", "Dropout"})

_ONCE = "ONNX Runtime's constant folding computes it once, when the session is created"


class ComputedOnce:
    """The main graph's constant tensors, grown as nodes computed from them are found."""

    def __init__(self, graph: onnx.GraphProto, static_shapes: dict[str, tuple]):
        overridable = {i.name for i in graph.input}
        self.names = {t.name for t in graph.initializer if t.name not in overridable}
        self.names.update(o for n in graph.node if n.op_type == "Constant" and n.domain in _ONNX for o in n.output)
        self._shapes = static_shapes

    def take(self, node: onnx.NodeProto) -> str | None:
        """Why ``node`` is computed once (then its outputs count as constants from now on), or None.
        ``node`` must come after its inputs' producers (graph order)."""
        if node.domain not in _ONNX or node.op_type in NON_DETERMINISTIC or not node.output:
            return None
        if node.op_type == "Constant":
            return "a constant: ONNX Runtime makes it an initializer when it loads the model"
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            return None
        inputs = [name for name in node.input if name]
        if node.op_type == "Shape" and inputs:
            shape = self._shapes.get(inputs[0])
            why = f"the shape of {inputs[0]!r} is static: {_ONCE}"
            constant = shape is not None and all(isinstance(d, int) for d in shape)
        else:
            why = f"its inputs are constants: {_ONCE}"
            constant = bool(inputs) and all(name in self.names for name in inputs)
        if not constant:
            return None
        self.names.update(o for o in node.output if o)
        return why
