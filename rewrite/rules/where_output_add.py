"""``Where(Y < 0, dY * (Y + alpha), dY) -> EluGrad(dY, Y){alpha}``.

The form that reads the ELU *output*: PyTorch's ``nn.ELU(inplace=True)`` export (``<=``; on 3-D
and larger activations through Reshapes: EluGrad, elementwise, reads the reshaped Y), hand-written
graphs (``Less``), any comparison spelling and branch order, ``Y + alpha`` as ``Add`` either way
round or ``Sub(Y, -alpha)``, ``dY`` itself a product, float32 or Cast-wrapped float16/bfloat16.

Semantics: with ``Less`` it is EluGrad's own formula, bit-exact for any Y (also Cast-wrapped:
exact upcasts, the same float32 math, one round-to-nearest-even cast). With ``<=`` it is
bit-exact for alpha = 1 (at Y == +-0: dY*(0+1) == dY); with alpha != 1 it differs at Y == 0
(alpha*dY against dY), so it is fused only when Y is the output of an Elu with that alpha (then
Y == 0 only for X == 0), with that note. A negated test also differs at NaN Y. Un-wrapped
float16/bfloat16 arithmetic rounds after each op.
"""

from __future__ import annotations

from ort_ops.rewrite.rules.base import COMPARISON_OPS
from ort_ops.rewrite.rules.elu_select import where_rule
from ort_ops.rewrite.rules.rule import needs

NAME = "where_output_add"

RULE = where_rule(NAME, kind="output", negative_ops=("Add", "Sub"), needed=needs(COMPARISON_OPS, ("Add", "Sub")),
                  doc=__doc__.splitlines()[0])
