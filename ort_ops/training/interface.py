"""The interface of a training graph, defined once: what :func:`export_training_graph` writes and
what :class:`~ort_ops.training.Trainer` (and ``rewrite``'s validation) read.

Outputs: ``loss`` (a scalar) and ``grad.<parameter name>`` per trainable parameter; with
``params_as_inputs=True`` the parameters are graph inputs named like the parameters.

Buffer state (a module buffer its ``forward`` changes, e.g. BatchNorm's ``running_mean``,
``running_var`` and ``num_batches_tracked`` in train mode): an input named like the buffer, whose
initializer of the same name holds its starting value, and an output ``new.<buffer name>`` with
its value after the step. The trainer feeds each step's ``new.<name>`` to the next step's
``<name>``; the optimizer does not touch it. The optimizer's update graph uses the same ``new.``
prefix for the parameters and its state.
"""

LOSS_NAME = "loss"
GRAD_PREFIX = "grad."
NEW_PREFIX = "new."


def grad_name(parameter: str) -> str:
    return GRAD_PREFIX + parameter


def new_name(state: str) -> str:
    """The output holding ``state``'s value after a step."""
    return NEW_PREFIX + state


def buffer_state_names(model) -> list[str]:
    """The buffer-state inputs of training graph ``model`` (an ``onnx.ModelProto``), in input order:
    those with a ``new.<name>`` output."""
    outputs = {o.name for o in model.graph.output}
    return [i.name for i in model.graph.input if new_name(i.name) in outputs]


def without_buffer_defaults(model):
    """A copy of training graph ``model`` without the initializers of its buffer-state inputs, for
    a session that feeds them every run (ONNX Runtime warns about each initializer that is also a
    graph input, and treats it as an input anyway)."""
    names = set(buffer_state_names(model))
    copy = type(model)()
    copy.CopyFrom(model)
    if names:
        keep = [t for t in copy.graph.initializer if t.name not in names]
        del copy.graph.initializer[:]
        copy.graph.initializer.extend(keep)
    return copy
