"""``Y * (dY - ReduceSum(dY * Y, [axis]))  ->  ai.ortops::SoftmaxGrad(dY, Y){axis}``: the factored
spelling of the softmax backward, anchored on its Mul; matched, checked and replaced by
:mod:`ort_ops.rewrite.rules.softmax_backward` (same semantics, same refusals)."""

from ort_ops.rewrite.rules.rule import Rule, needs
from ort_ops.rewrite.rules.softmax_backward import FACTORED_NAME, check, pattern, replacement

RULE = Rule(FACTORED_NAME, "Mul", pattern, check, replacement, needs("Sub", "ReduceSum", "Softmax"),
            __doc__.splitlines()[0])
