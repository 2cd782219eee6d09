"""SGD and Adam hyperparameters checked where they are given (issue 19 item 11): PyTorch's ranges and
finite values at construction, and at graph construction (the Trainer's) what the update graph's
dtype can hold; every error names the optimizer, the hyperparameter, its value and what is accepted."""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto, helper

from ort_ops.domain import IR_VERSION, ONNX_OPSET
from ort_ops.training.optim import SGD, Adam
from ort_ops.training.trainer import Trainer

SHAPES = {"w": (3,)}

BAD_AT_CONSTRUCTION = [
    (Adam, {"lr": -1e-3}, r"Adam lr must be a finite number >= 0 \(the learning rate\), got -0.001"),
    (Adam, {"lr": math.nan}, "Adam lr must be a finite number >= 0 .*got nan"),
    (Adam, {"lr": math.inf}, "Adam lr must be .*got inf"),
    (Adam, {"lr": 10**400}, "Adam lr must be .*got 1000"),
    (Adam, {"lr": "1e-3"}, r"Adam lr must be .*got '1e-3' \(str\)"),
    (Adam, {"lr": True}, r"Adam lr must be .*got True \(bool\)"),
    (Adam, {"betas": (0.9, 1.0)}, r"Adam betas\[1\] must be a number in \[0, 1\), got 1.0"),
    (Adam, {"betas": (-0.1, 0.999)}, r"Adam betas\[0\] must be a number in \[0, 1\), got -0.1"),
    (Adam, {"betas": (math.nan, 0.999)}, r"Adam betas\[0\] must be .*got nan"),
    (Adam, {"betas": (0.9,)}, r"Adam betas must be two numbers in \[0, 1\) \(beta1, beta2\), got \(0.9,\)"),
    (Adam, {"betas": 0.9}, "Adam betas must be two numbers .*got 0.9"),
    (Adam, {"betas": "ab"}, "Adam betas must be two numbers .*got 'ab'"),
    (Adam, {"eps": -1e-8}, "Adam eps must be a finite number >= 0, got -1e-08"),
    (Adam, {"eps": math.inf}, "Adam eps must be a finite number >= 0, got inf"),
    (Adam, {"weight_decay": -0.5}, "Adam weight_decay must be a finite number >= 0, got -0.5"),
    (Adam, {"weight_decay": math.nan}, "Adam weight_decay must be .*got nan"),
    (SGD, {"lr": -0.1}, "SGD lr must be a finite number >= 0 .*got -0.1"),
    (SGD, {"lr": math.inf}, "SGD lr must be .*got inf"),
    (SGD, {"momentum": -0.5}, "SGD momentum must be a finite number >= 0, got -0.5"),
    (SGD, {"momentum": math.nan}, "SGD momentum must be .*got nan"),
    (SGD, {"dampening": math.inf}, "SGD dampening must be a finite number, got inf"),
    (SGD, {"weight_decay": -1.0}, "SGD weight_decay must be a finite number >= 0, got -1.0"),
    (SGD, {"momentum": 0.9, "nesterov": 1}, "SGD nesterov must be True or False, got 1"),
    (SGD, {"nesterov": True}, "SGD nesterov=True requires momentum > 0"),
]


@pytest.mark.parametrize("cls, kwargs, message", BAD_AT_CONSTRUCTION,
                         ids=[f"{c.__name__}-{k}" for c, k, _ in BAD_AT_CONSTRUCTION])
def test_bad_hyperparameters_are_rejected_at_construction(cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cls(**kwargs)


BAD_FOR_FLOAT32 = [
    # issue 19's case: Adam(lr=1e39) was accepted and failed at the first step about cann_scalars
    (Adam(lr=1e39), r"Adam lr = 1e\+39 overflows float32 \(largest 3.4028234663852886e\+38\): the parameters"),
    (Adam(lr=4e37), r"Adam lr = 4.000000000000001e\+38 overflows float32 .* \(as the first step's size "
                    r"lr / \(1 - beta1\) = 4.000000000000001e\+38\)"),
    (Adam(lr=1e-50), "Adam lr = 1e-50 rounds to 0 in float32"),
    (Adam(eps=1e-50), "Adam eps = 1e-50 rounds to 0 in float32"),
    (Adam(eps=1e39), r"Adam eps = 1e\+39 overflows float32"),
    (Adam(weight_decay=1e39), r"Adam weight_decay = 1e\+39 overflows float32"),
    (Adam(betas=(0.99999999, 0.999)), r"Adam betas\[0\] = 0.99999999 rounds to 1 in float32, must be in \[0, 1\)"),
    (Adam(betas=(0.9, 0.999999999)), r"Adam betas\[1\] = 0.999999999 rounds to 1 in float32"),
    (SGD(lr=1e39), r"SGD lr = 1e\+39 overflows float32"),
    (SGD(lr=1e-50), "SGD lr = 1e-50 rounds to 0 in float32"),
    (SGD(momentum=1e39), r"SGD momentum = 1e\+39 overflows float32"),
    (SGD(momentum=0.9, dampening=-1e39), r"SGD dampening = -1e\+39 overflows float32"),
    (SGD(weight_decay=1e-50), "SGD weight_decay = 1e-50 rounds to 0 in float32"),
]


@pytest.mark.parametrize("opt, message", BAD_FOR_FLOAT32, ids=[repr(o) for o, _ in BAD_FOR_FLOAT32])
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_hyperparameters_a_float32_graph_cannot_hold_are_rejected_when_it_is_built(opt, message, fused):
    with pytest.raises(ValueError, match=message):
        opt.build_graph(SHAPES, np.float32, fused=fused)


@pytest.mark.parametrize("opt", [Adam(lr=1e39), Adam(betas=(0.99999999, 0.999)), SGD(lr=1e39)], ids=repr)
def test_float64_parameters_take_what_float64_holds(opt):
    opt.build_graph(SHAPES, np.float64)  # no error: the unfused float64 graph holds these


def _tiny_training_graph():
    """loss = sum(x * w), grad.w = sum over rows of x."""
    f = TensorProto.FLOAT
    nodes = [helper.make_node("Mul", ["x", "w"], ["xw"]),
             helper.make_node("ReduceSum", ["xw"], ["loss"], keepdims=0),
             helper.make_node("ReduceSum", ["x", "axes0"], ["grad.w"], keepdims=0)]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("x", f, [2, 3]), helper.make_tensor_value_info("w", f, [3])],
        [helper.make_tensor_value_info("loss", f, []), helper.make_tensor_value_info("grad.w", f, [3])],
        [helper.make_tensor("axes0", TensorProto.INT64, [1], [0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
    model.ir_version = IR_VERSION
    return model


def test_adam_lr_1e39_fails_at_trainer_construction_naming_lr():
    """Issue 19 item 11: the error names lr when the trainer is built, not cann_scalars at a step."""
    with pytest.raises(ValueError, match=r"Adam lr = 1e\+39 overflows float32") as err:
        Trainer(_tiny_training_graph(), {"w": np.ones(3, np.float32)}, Adam(lr=1e39), progress=False)
    assert "cann_scalars" not in str(err.value)


def test_good_hyperparameters_are_kept_as_given():
    adam = Adam(lr=3, betas=[0, 0.5], eps=0, weight_decay=np.float32(0.25))
    assert (adam.lr, adam.betas, adam.eps, adam.weight_decay) == (3.0, (0.0, 0.5), 0.0, 0.25)
    assert type(adam.lr) is float and type(adam.weight_decay) is float
    sgd = SGD(lr=0, momentum=np.float64(0.9), dampening=-0.5, nesterov=np.bool_(False))
    assert (sgd.lr, sgd.momentum, sgd.dampening, sgd.nesterov) == (0.0, 0.9, -0.5, False)
    assert adam.config() == {"kind": "adam", "lr": 3.0, "betas": (0.0, 0.5), "eps": 0.0, "weight_decay": 0.25}
    assert sgd.config() == {"kind": "sgd", "lr": 0.0, "momentum": 0.9, "dampening": -0.5, "weight_decay": 0.0,
                            "nesterov": False}
