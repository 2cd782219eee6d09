"""The fusion rules, in the order they are tried (the only lists of them).

``RULES``: the ELU backward -> ``EluGrad`` rules (:func:`ort_ops.rewrite.fuse_elu_grad`).
``TRAINING_RULES``: those, then the subgraph rules -> ``SoftmaxCrossEntropyLossAndGrad`` and
``MaxPoolGrad`` (:func:`ort_ops.rewrite.fuse_training`). The subgraph rules anchor on other ops (Sub,
ScatterElements) than the ELU rules (Where, Mul, EluGrad), so their order among each other only
matters for reports.

A node is the root of at most one site: the first rule whose pattern and check accept it wins.
Sites may share the nodes they read (two ELUs of one tensor share one comparison and one Exp):
each fused op only replaces its site's outputs, and the nodes nothing reads any more are removed.
"""

from ort_ops.rewrite.rules import (
    foreign_elu_grad,
    leaky_relu_backward,
    max_pool_backward,
    min_add_mul,
    mul_where_factor,
    softmax_cross_entropy,
    where_input_exp,
    where_output_add,
)
from ort_ops.rewrite.rules.rule import Rule, Site

RULES: tuple[Rule, ...] = (
    foreign_elu_grad.RULE,
    where_input_exp.RULE,
    where_output_add.RULE,
    mul_where_factor.RULE,
    min_add_mul.RULE,
)

TRAINING_RULES: tuple[Rule, ...] = RULES + (
    softmax_cross_entropy.RULE,
    max_pool_backward.RULE,
    leaky_relu_backward.RULE,
)

__all__ = ["RULES", "Rule", "Site", "TRAINING_RULES"]
