"""The aten.empty_permuted translation (ort_ops.training.translations.empty_permuted) against PyTorch:
the op by itself with onnxscript's eager evaluator (its values are unspecified: the shape and dtype
are the op, and zeros are what the translation gives), and the training graphs it made exportable,
nn.SiLU's and torch.sigmoid's (their backward spells ``1 - sigmoid(x)`` as ``full_like(empty_permuted(...),
1) - sigmoid(x)``), against eager autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto
from torch import nn

from ort_ops.training import export_training_graph
from ort_ops.training.translations import CUSTOM_TRANSLATION_TABLE, empty_permuted
from ort_ops.training.verify import eager_loss_and_grads, feeds_for, run_ort


@pytest.mark.parametrize("dtype,np_dtype", [(None, np.float32), (TensorProto.FLOAT, np.float32),
                                            (TensorProto.FLOAT16, np.float16), (TensorProto.INT64, np.int64)])
@pytest.mark.parametrize("size,layout", [([4, 8], [0, 1]), ([2, 3, 5], [2, 0, 1]), ([3], [0])])
def test_empty_permuted_has_the_size_and_dtype(size, layout, dtype, np_dtype):
    torch_dtype = {None: torch.float32, TensorProto.FLOAT: torch.float32, TensorProto.FLOAT16: torch.float16,
                   TensorProto.INT64: torch.int64}[dtype]
    want = torch.ops.aten.empty_permuted.default(size, layout, dtype=torch_dtype)
    result = (empty_permuted.empty_permuted(size, layout) if dtype is None
              else empty_permuted.empty_permuted(size, layout, dtype=dtype))
    got = np.asarray(result.value)  # onnxscript's eager Tensor
    assert got.shape == tuple(want.shape) and got.dtype == np_dtype
    assert not got.any()  # zeros (the values are unspecified; these are the translation's)


def test_symbolic_sizes_are_refused():
    with pytest.raises(ValueError, match=r"aten.empty_permuted: size .* is not static"):
        empty_permuted.empty_permuted([4, object()], [0, 1])


def test_the_translation_is_in_the_table():
    assert CUSTOM_TRANSLATION_TABLE[torch.ops.aten.empty_permuted.default] is empty_permuted.empty_permuted


class Gated(nn.Module):
    def __init__(self, gate):
        super().__init__()
        self.a, self.b, self.gate = nn.Linear(5, 6), nn.Linear(6, 3), gate

    def forward(self, x):
        return self.b(self.gate(self.a(x)))


@pytest.mark.parametrize("gate", [nn.SiLU(), nn.Sigmoid(), lambda h: h * torch.sigmoid(h)],
                         ids=["silu", "sigmoid", "x_sigmoid"])
def test_sigmoid_gated_training_graphs_export_and_match_eager(gate):
    torch.manual_seed(0)
    module = Gated(gate)
    x, y = torch.randn(4, 5), torch.randint(0, 3, (4,))
    graph = export_training_graph(module, (x,), F.cross_entropy, targets=(y,), params_as_inputs=True)
    got = run_ort(graph, feeds_for(graph, module, (x,), (y,)))
    want = eager_loss_and_grads(module, (x,), F.cross_entropy, (y,))
    assert sorted(want) == sorted(got) and len(want) == 5  # the loss, 4 gradients
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value.numpy(), rtol=1e-5, atol=1e-7, err_msg=name)
