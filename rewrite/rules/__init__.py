"""The ELU-backward fusion rules, in the order they are tried (the only list of them).

Earlier rules win when patterns overlap: a foreign single node first, then the Where forms
(input-based before output-based; their patterns are disjoint: Exp versus Add), then the
article's Min/Add/Mul formula.
"""

from rewrite.rules import foreign_elu_grad, min_add_mul, where_input_exp, where_output_add
from rewrite.rules.base import Rule, Site

RULES: tuple[Rule, ...] = (
    foreign_elu_grad.RULE,
    where_input_exp.RULE,
    where_output_add.RULE,
    min_add_mul.RULE,
)

__all__ = ["RULES", "Rule", "Site"]
