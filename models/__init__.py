"""Small real models and training graphs used by the demo, the tests and the benchmarks.

- :func:`export_training_graph` -- a PyTorch module + loss as an ONNX training graph
  (outputs ``loss`` and ``grad.<param>``), verified against eager autograd in ORT.
- :mod:`models.conv_backward` -- the ONNX translation of ``aten.convolution_backward``
  the exporter lacks (Conv1d/2d training graphs).
- :mod:`models.zoo` -- the reference ELU MLP / CNN; :mod:`models.fixtures` -- the committed
  fixtures and how to rebuild them; :mod:`models.verify` -- comparison with eager autograd.
"""

from models.export import GRAD_PREFIX, LOSS_NAME, export_training_graph, save_atomic
from models.verify import TOLERANCES, compare_with_eager
from models.zoo import EluCNN, EluMLP, elu_cnn, elu_mlp, elu_mlp_alpha, elu_mlp_inplace

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
