"""Small real models and training graphs used by the demo, the tests and the benchmarks.

- :func:`export_training_graph` -- a PyTorch module + loss as an ONNX training graph
  (outputs ``loss`` and ``grad.<param>``), verified against eager autograd in ORT.
- :mod:`models.conv_backward` -- the ONNX translation of ``aten.convolution_backward``
  the exporter lacks (Conv1d/2d training graphs).
- :mod:`models.zoo` -- the reference ELU MLP / CNN; :mod:`models.fixtures` -- the committed
  fixtures and how to rebuild them; :mod:`models.verify` -- comparison with eager autograd.
"""

import importlib

# Names are loaded on first use: most of them need torch, which the CANN environment
# (.venv-cann) does not have, while models.train / models.train_digits do not.
_LAZY = {
    "GRAD_PREFIX": "models.export",
    "LOSS_NAME": "models.export",
    "export_training_graph": "models.export",
    "save_atomic": "models.export",
    "TOLERANCES": "models.verify",
    "compare_with_eager": "models.verify",
    "EluCNN": "models.zoo",
    "EluMLP": "models.zoo",
    "elu_cnn": "models.zoo",
    "elu_mlp": "models.zoo",
    "elu_mlp_alpha": "models.zoo",
    "elu_mlp_inplace": "models.zoo",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'models' has no attribute {name!r}")


__all__ = [
    "GRAD_PREFIX",
    "LOSS_NAME",
    "TOLERANCES",
    "EluCNN",
    "EluMLP",
    "compare_with_eager",
    "elu_cnn",
    "elu_mlp",
    "elu_mlp_alpha",
    "elu_mlp_inplace",
    "export_training_graph",
    "save_atomic",
]
