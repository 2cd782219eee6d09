"""Graph passes over exported ONNX training graphs: fuse the ELU backward into
``ai.ortops::EluGrad`` (and, with ``fuse_training``, the softmax cross-entropy and the max-pool
backward into ``SoftmaxCrossEntropyLossAndGrad`` and ``MaxPoolGrad``) and lower the ops back to
standard ONNX (see issue 3, "rewrite"; issue 13).

Public API::

    from ort_ops.rewrite import fuse_elu_grad, fuse_training, lower_elu_grad, inspect_elu_grad, validate, RewriteReport

    report = RewriteReport()
    fused = fuse_elu_grad(model, strict=False, report=report)   # new ModelProto
    fused = fuse_training(model, report=report)                 # + cross-entropy, max-pool backward
    print(report.summary()); report.to_json()
    lowered = lower_elu_grad(fused)                             # standard ops, bit-exact
    validate(model, fused)                                      # ORT + reference evaluator

Passes accept a ModelProto or a file path.

Rules live one per module in ``rewrite/rules/`` and are listed once, in order, in
``rewrite.rules.RULES`` (ELU) and ``rewrite.rules.TRAINING_RULES`` (all). Command line:
``python -m ort_ops.rewrite {fuse,lower,inspect} ...``.
"""

from ort_ops._source_checkout import refuse_old_name

refuse_old_name(__name__)  # only as ort_ops.<name>: the old top-level name would be a second copy

import ort_ops  # noqa: F401  (registers the ai.ortops schemas for onnx.checker)
from ort_ops.rewrite.fuse import fuse_elu_grad, fuse_training, has_candidates, inspect_elu_grad, inspect_training
from ort_ops.rewrite.lower import lower, lower_elu_grad
from ort_ops.rewrite.report import RewriteReport, SiteReport
from ort_ops.rewrite.rules import RULES, TRAINING_RULES


def validate(original, rewritten, **kwargs):
    """Compare ``original`` and ``rewritten`` numerically; see :func:`ort_ops.rewrite.validation.validate`.

    (Imported on first use: it needs onnxruntime, which the passes themselves do not.)"""
    from ort_ops.rewrite.validation import validate as _validate

    return _validate(original, rewritten, **kwargs)


__all__ = [
    "RULES", "RewriteReport", "SiteReport", "TRAINING_RULES", "fuse_elu_grad", "fuse_training", "has_candidates",
    "inspect_elu_grad", "inspect_training", "lower", "lower_elu_grad", "validate",
]
