"""The ELU-backward fusion rules, in the order they are tried (the only list of them).

A node is the root of at most one site: the first rule whose pattern and check accept it wins.
Sites may share the nodes they read (two ELUs of one tensor share one comparison and one Exp):
each EluGrad only replaces its root's output, and the nodes nothing reads any more are removed.
"""

from rewrite.rules import foreign_elu_grad, min_add_mul, mul_where_factor, where_input_exp, where_output_add
from rewrite.rules.base import Rule, Site

RULES: tuple[Rule, ...] = (
    foreign_elu_grad.RULE,
    where_input_exp.RULE,
    where_output_add.RULE,
    mul_where_factor.RULE,
    min_add_mul.RULE,
)

__all__ = ["RULES", "Rule", "Site"]
