"""The fusion rules, in the order they are tried (the only lists of them).

``RULES``: the ELU backward -> ``EluGrad`` rules (:func:`ort_ops.rewrite.fuse_elu_grad`).
``TRAINING_RULES``: those, then the subgraph rules -> ``SoftmaxCrossEntropyLossAndGrad``, ``MseLossAndGrad`` and
``MaxPoolGrad`` (:func:`ort_ops.rewrite.fuse_training`). The subgraph rules anchor on other ops (Sub,
ScatterElements) than the ELU rules (Where, Mul, EluGrad), so their order among each other only
matters for reports.

A node is the root of at most one site: the first rule whose pattern and check accept it wins.
Sites may share the nodes they read (two ELUs of one tensor share one comparison and one Exp):
each fused op only replaces its site's outputs, and the nodes nothing reads any more are removed.
"""

import importlib

from ort_ops.rewrite.rules.rule import Rule, Site

# The rule order: module names in rewrite/rules/, each exporting ``RULE``. A new rule is one name
# here (tests/rewrite/test_rule_order.py checks that every module with a RULE is listed once).
ELU_RULE_MODULES = (
    "foreign_elu_grad",
    "where_input_exp",
    "where_output_add",
    "mul_where_factor",
    "min_add_mul",
)
TRAINING_RULE_MODULES = (
    "softmax_cross_entropy",
    "mse_loss",
    "max_pool_backward",
    "leaky_relu_backward",
    "softmax_backward",
    "softmax_backward_factored",
    "layer_norm_backward",
    "batch_norm_backward",
)


def _rules(modules: tuple[str, ...]) -> tuple[Rule, ...]:
    return tuple(importlib.import_module(f"{__name__}.{module}").RULE for module in modules)


RULES: tuple[Rule, ...] = _rules(ELU_RULE_MODULES)

TRAINING_RULES: tuple[Rule, ...] = RULES + _rules(TRAINING_RULE_MODULES)

__all__ = ["ELU_RULE_MODULES", "RULES", "Rule", "Site", "TRAINING_RULES", "TRAINING_RULE_MODULES"]
