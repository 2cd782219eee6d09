"""ort_ops.training.translations.layer_norm: float16 LayerNorm training graphs export and verify.

Without the translation, torch 2.13's exporter returns LayerNormalization's float32 statistics
where the graph declares float16 ones, and ONNX Runtime rejects the graph. Expected values come
from PyTorch eager (export_training_graph's verify=True compares the loss and every gradient).
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from ort_ops import training


def _model(affine: bool, shape):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 8), nn.Unflatten(1, shape), nn.LayerNorm(shape, elementwise_affine=affine),
                         nn.ELU(), nn.Flatten(), nn.Linear(8, 3))


@pytest.mark.parametrize("shape", [(8,), (2, 4)], ids=["last-axis", "last-two-axes"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "no-affine"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_layer_norm_training_graph_verifies_against_eager(dtype, affine, shape):
    x, y = torch.randn(4, 8), torch.randint(0, 3, (4,))
    graph = training.export_training_graph(_model(affine, shape), (x,), F.cross_entropy, targets=(y,),
                                           params_as_inputs=True, dtype=dtype)  # verify=True
    (ln,) = [n for n in graph.graph.node if n.op_type == "LayerNormalization"]
    assert [a.i for a in ln.attribute if a.name == "stash_type"] == [1]  # statistics in float32


def test_without_the_translation_float16_layer_norm_does_not_load(monkeypatch):
    """The exporter's own translation (the reason for ours): ONNX Runtime rejects its graph."""
    from ort_ops.training import translations
    from ort_ops.training.translations import layer_norm

    table = dict(translations.CUSTOM_TRANSLATION_TABLE)
    for target in layer_norm.TRANSLATIONS:
        del table[target]
    monkeypatch.setattr(translations, "CUSTOM_TRANSLATION_TABLE", table)
    x, y = torch.randn(4, 8), torch.randint(0, 3, (4,))
    with pytest.raises(Exception, match="bound to different types"):
        training.export_training_graph(_model(True, (8,)), (x,), F.cross_entropy, targets=(y,),
                                       params_as_inputs=True, dtype=torch.float16)
