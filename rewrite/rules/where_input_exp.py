"""``Where(X <= 0, dY * alpha * exp(X), dY) -> EluGrad(dY, Elu(X){alpha}){alpha}``.

PyTorch's joint-graph export of ``nn.ELU(alpha)`` (the backward reads the ELU *input* X), in
every spelling: any comparison of X with 0 (``<=``, ``<``, ``0 >= X``, ``Not(X > 0)``, branches
swapped), the factors in any order and grouping, ``dY`` itself a product (a dropout mask, a
scale), constants as initializers, ``Constant`` or ``Cast(Constant)`` nodes, and the
float16/bfloat16 form with ``Cast(.., to=FLOAT)`` inputs and one ``Cast`` back. Y is the output of
the Elu of X whose alpha the constants give (several Elus of one X: the one with that alpha).

Semantics: never bit-exact (EluGrad uses ``Y + alpha`` where the original uses
``alpha * exp(X)``, which round differently; in float16/bfloat16 Y itself is rounded to that
type first); with alpha != 1 a ``<=`` test differs from EluGrad's ``<`` at X == 0, and a
negated test also at NaN X. Fused by default with these notes; never with ``strict=True``.
"""

from __future__ import annotations

from ort_ops.rewrite.rules.base import COMPARISON_OPS
from ort_ops.rewrite.rules.elu_select import where_rule
from ort_ops.rewrite.rules.rule import needs

NAME = "where_input_exp"

RULE = where_rule(NAME, kind="input", negative_ops=("Exp",), needed=needs(COMPARISON_OPS, "Exp", ("Elu", "Celu")),
                  doc=__doc__.splitlines()[0])
