"""The interface of a training graph, defined once: what :func:`export_training_graph` writes and
what :class:`~ort_ops.training.Trainer` (and ``rewrite``'s validation) read.

Outputs: ``loss`` (a scalar) and ``grad.<parameter name>`` per trainable parameter; with
``params_as_inputs=True`` the parameters are graph inputs named like the parameters.
"""

LOSS_NAME = "loss"
GRAD_PREFIX = "grad."


def grad_name(parameter: str) -> str:
    return GRAD_PREFIX + parameter
