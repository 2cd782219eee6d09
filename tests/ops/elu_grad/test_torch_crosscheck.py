"""float32 EluGrad against PyTorch's elu_backward(is_result=True) with alpha = 1, where the
two definitions agree everywhere (PyTorch tests <= 0, EluGrad < 0; at Y == 0 both give dY)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is a test dependency (requirements/cpu.txt)")

from gen_data import gen_inputs  # noqa: E402
from op_helpers import assert_bits_equal, make_session, run_elu_grad  # noqa: E402
from ort_ops.model_builder import make_elu_grad_model  # noqa: E402


def torch_elu_backward(grads: np.ndarray, y: np.ndarray) -> np.ndarray:
    return torch.ops.aten.elu_backward(
        torch.from_numpy(grads), 1.0, 1.0, 1.0, True, torch.from_numpy(y)
    ).numpy()


@pytest.mark.parametrize("shape", [(256,), (3, 5, 7), (1 << 16,)])
def test_float32_matches_torch(shape):
    grads, _ = gen_inputs(shape, "float32", seed=1)
    x = torch.from_numpy(gen_inputs(shape, "float32", seed=2)[1])
    y = torch.nn.functional.elu(x).numpy()  # real ELU outputs, in (-1, 2]
    session = make_session(make_elu_grad_model("float32", shape))
    ours = run_elu_grad(session, grads, y)
    theirs = torch_elu_backward(grads, y)
    # PyTorch computes grad * (y + alpha*scale) * input_scale: for alpha = scale = 1 that is
    # grad * (y + 1) in float32 — the same operations, so bit-exact agreement is expected.
    assert_bits_equal(ours, theirs)


def test_float32_matches_torch_autograd_through_elu():
    """dX from autograd of ELU(X) equals EluGrad(dY, ELU(X)) up to exp vs Y + 1 rounding."""
    x = torch.from_numpy(gen_inputs((4096,), "float32", seed=5)[1]).requires_grad_()
    y = torch.nn.functional.elu(x)
    dy = torch.from_numpy(gen_inputs((4096,), "float32", seed=6)[0])
    (dx,) = torch.autograd.grad(y, x, dy)
    session = make_session(make_elu_grad_model("float32", (4096,)))
    ours = run_elu_grad(session, dy.numpy(), y.detach().numpy())
    np.testing.assert_allclose(ours, dx.numpy(), rtol=1e-6, atol=1e-7)
