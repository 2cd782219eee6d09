"""Every placement rule on the CANN EP (the ACL simulator without an NPU): a one-node standard
ONNX model, placed by cann_ep.session, runs on CANNExecutionProvider (profile-checked) and gives
the CPU EP's results on the same inputs: bit for bit where both compute each element with IEEE
float32 operations or move data; within ort_ops.tolerances where the math differs in rounding
(exp/log/erf-based ops: libm vs ORT's vectorised approximations; matrix products and
convolutions: summation order)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from ort_ops import tolerances
from ort_ops.domain import CANN_DOMAIN, IR_VERSION

cann_ep = pytest.importorskip("ort_ops.cann_ep")
PROVIDER = "CANNExecutionProvider"
OPSET = 20
RNG = np.random.default_rng(7)


pytestmark = pytest.mark.usefixtures("cann_simulator")


def f32(*shape, low=-3.0, high=3.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


def i64(*shape, high=5):
    return RNG.integers(-high, high, shape).astype(np.int64)


def boolean(*shape):
    return RNG.random(shape) < 0.5


class Case:
    """``op(inputs, **attrs)``; ``consts``: inputs given as initializers (shapes, axes);
    ``exact``: bit-exact against the CPU EP, else within the tolerance table; ``opset``: the
    model's ai.onnx opset; ``unnamed``: indices of optional outputs named "" (not produced)."""

    def __init__(self, id, op, inputs, attrs=None, consts=(), exact=True, outputs=1, opset=OPSET, unnamed=()):
        self.id, self.op, self.inputs, self.attrs = id, op, inputs, attrs or {}
        self.consts, self.exact, self.n_out, self.opset = set(consts), exact, outputs, opset
        self.unnamed = set(unnamed)

    def model(self):
        names, graph_inputs, inits = [], [], []
        for i, value in enumerate(self.inputs):
            if value is None:
                names.append("")
                continue
            name = f"in{i}"
            names.append(name)
            if i in self.consts:
                inits.append(numpy_helper.from_array(np.asarray(value), name))
            else:
                elem = helper.np_dtype_to_tensor_dtype(np.asarray(value).dtype)
                graph_inputs.append(helper.make_tensor_value_info(name, elem, list(np.shape(value))))
        outs = ["" if k in self.unnamed else f"out{k}" for k in range(self.n_out)]
        node = helper.make_node(self.op, names, outs, name="node", **self.attrs)
        graph = helper.make_graph([node], self.id, graph_inputs,
                                  [helper.make_empty_tensor_value_info(o) for o in outs if o], inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        m.ir_version = IR_VERSION
        return m

    def feeds(self):
        return {f"in{i}": np.asarray(v) for i, v in enumerate(self.inputs) if v is not None and i not in self.consts}


CASES = [
    Case("elu", "Elu", [f32(4, 33)], {"alpha": 0.5}, exact=False),
    Case("elu_f16", "Elu", [f32(4, 33).astype(np.float16)], exact=False),
    Case("exp", "Exp", [f32(4, 33)], exact=False),
    Case("log", "Log", [f32(4, 33, low=0.01, high=5)], exact=False),
    Case("neg_int64", "Neg", [i64(4, 5)]),
    Case("abs_f16", "Abs", [f32(3, 7).astype(np.float16)]),
    Case("sqrt_f16", "Sqrt", [f32(3, 7, low=0, high=9).astype(np.float16)], exact=True),
    Case("reciprocal", "Reciprocal", [f32(3, 7, low=0.5, high=4)]),
    Case("sigmoid", "Sigmoid", [f32(3, 7)], exact=False),
    Case("relu_f16", "Relu", [f32(3, 7).astype(np.float16)]),
    Case("tanh", "Tanh", [f32(3, 7)], exact=False),
    Case("not", "Not", [boolean(3, 5)]),
    # Sign (CANN Sign: (x > 0) - (x < 0), NaN and -0.0 give +0, as ONNX Runtime's float16 Sign; its float32 Sign
    # keeps NaN) and LeakyRelu (alpha as negative_slope)
    Case("sign", "Sign", [np.array([[-2.5, -0.0, 0.0, 1e-30, np.inf, -np.inf, np.nan, 3.0]], np.float32)]),
    Case("sign_f16", "Sign", [np.array([[-2.5, -0.0, 0.0, 6e-8, np.inf, -np.inf, np.nan]], np.float16)]),
    Case("sign_int32", "Sign", [i64(4, 5).astype(np.int32)]),
    Case("sign_int64", "Sign", [i64(4, 5)]),
    Case("leaky_relu", "LeakyRelu", [f32(4, 33)]),
    Case("leaky_relu_alpha", "LeakyRelu", [f32(4, 33)], {"alpha": 0.2}),
    Case("leaky_relu_f16", "LeakyRelu", [f32(3, 7).astype(np.float16)], {"alpha": 0.1}),
    # Min / Max: variadic, broadcasting; NaN propagates; on equal operands the later input (ORT's -0.0 / +0.0)
    Case("min_nan_zeros", "Min", [np.array([np.nan, 1, -0.0, 0.0, 2], np.float32),
                                  np.array([1, np.nan, 0.0, -0.0, 2], np.float32)]),
    Case("max_nan_zeros", "Max", [np.array([np.nan, 1, -0.0, 0.0, -np.inf], np.float32),
                                  np.array([1, np.nan, 0.0, -0.0, -np.inf], np.float32)]),
    Case("max_one", "Max", [f32(3, 4)]),
    Case("min_three_bcast", "Min", [f32(3, 1), f32(1, 4), np.float32(0.5)]),
    Case("max_four_bcast_f16", "Max", [f32(2, 1, 3).astype(np.float16), f32(4, 1).astype(np.float16),
                                       f32(3).astype(np.float16), f32(2, 4, 3).astype(np.float16)]),
    Case("min_int64", "Min", [i64(4, 5), i64(5)]),
    Case("max_int32_opset8", "Max", [i64(4, 5).astype(np.int32), i64(1, 5).astype(np.int32)], opset=13),
    # InstanceNormalization: LayerNormV4 over the spatial dims, then scale and B per channel
    Case("instance_norm", "InstanceNormalization", [f32(2, 3, 4, 5), f32(3), f32(3)], exact=False),
    Case("instance_norm_3d_eps", "InstanceNormalization", [f32(2, 4, 7), f32(4), f32(4)], {"epsilon": 0.1},
         exact=False),
    Case("instance_norm_5d_f16", "InstanceNormalization",
         [f32(1, 2, 3, 2, 4).astype(np.float16), f32(2).astype(np.float16), f32(2).astype(np.float16)], exact=False),
    Case("max_int8", "Max", [i64(4, 5).astype(np.int8), i64(5).astype(np.int8)]),
    Case("min_uint8", "Min", [np.arange(20, dtype=np.uint8).reshape(4, 5), np.full(5, 7, np.uint8)]),
    Case("max_uint32_extremes", "Max", [np.array([0, 1, 2**32 - 1, 5], np.uint32),
                                        np.array([3, 2**31, 1, 5], np.uint32)]),
    Case("min_uint64_extremes", "Min", [np.array([0, 2**64 - 1, 2**63, 9], np.uint64),
                                        np.array([1, 2**63 + 1, 2**64 - 2, 9], np.uint64)]),
    # ArgMax / ArgMin with select_last_index 1: StridedSlice (reverse), the first index, Sub from depth - 1
    Case("argmax_last_ties", "ArgMax", [np.array([[1, 3, 3, 0], [2, 2, 2, 2], [5, 1, 5, 1]], np.float32)],
         {"axis": 1, "select_last_index": 1}),
    Case("argmin_last_axis0_keepdims_f16", "ArgMin", [np.array([[1, 3], [1, 0], [4, 0]], np.float16)],
         {"axis": 0, "select_last_index": 1}),
    Case("argmax_last_int64_neg_axis", "ArgMax", [np.array([[[1, 9, 9], [4, 4, 2]]], np.int64)],
         {"axis": -1, "keepdims": 0, "select_last_index": 1}),
    Case("argmax_last_nan", "ArgMax",
         [np.array([[np.nan, 1, 2], [1, np.nan, 1], [3, 3, np.nan], [1, 2, 3]], np.float32)],
         {"axis": 1, "select_last_index": 1}),
    Case("max_f64", "Max", [f32(3, 4).astype(np.float64), f32(3, 1).astype(np.float64)]),
    # IsNaN: CANN IsNan (x != x; on Atlas A2/A3), NotEqual(x, x) where the SoC lacks it
    Case("is_nan", "IsNaN", [np.array([[np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, 3.0],
                                       [np.float32(np.nan), 1, 2, 3, np.nan, 5, 6, np.finfo(np.float32).max]],
                                      np.float32)]),
    Case("is_nan_f16", "IsNaN", [np.where(boolean(3, 7), np.nan, f32(3, 7)).astype(np.float16)]),
    Case("is_nan_opset13_3d", "IsNaN", [np.where(boolean(2, 3, 5), np.nan, f32(2, 3, 5))], opset=13),
    # CumSum: one CANN Cumsum (axis read on the host; exclusive / reverse passed on); float16 sums in float32 on both
    Case("cumsum", "CumSum", [f32(4, 33), np.array(1, np.int64)], consts=[1]),
    Case("cumsum_axis0_int32_axis", "CumSum", [f32(5, 3, 4), np.array(0, np.int32)], consts=[1]),
    Case("cumsum_exclusive", "CumSum", [f32(3, 17), np.array(-1, np.int64)], {"exclusive": 1}, consts=[1]),
    Case("cumsum_reverse", "CumSum", [f32(3, 17), np.array(1, np.int64)], {"reverse": 1}, consts=[1]),
    Case("cumsum_exclusive_reverse_neg_axis", "CumSum", [f32(2, 7, 3), np.array(-2, np.int64)],
         {"exclusive": 1, "reverse": 1}, consts=[1]),
    Case("cumsum_host_axis", "CumSum", [f32(3, 4, 5), np.array(2, np.int64)], opset=11),
    Case("cumsum_int32", "CumSum", [i64(4, 9, high=1000).astype(np.int32), np.array(1, np.int64)], {"reverse": 1},
         consts=[1]),
    Case("cumsum_int64_exclusive", "CumSum", [i64(6, 5, high=1 << 40), np.array(0, np.int32)], {"exclusive": 1},
         consts=[1]),
    Case("cumsum_f16", "CumSum", [f32(3, 40).astype(np.float16), np.array(1, np.int64)], consts=[1]),
    Case("cumsum_f16_lost_steps", "CumSum", [np.array([2048] + [1] * 8, np.float16), np.array(0, np.int64)],
         consts=[1]),
    Case("cumsum_f16_exclusive_reverse", "CumSum", [f32(4, 6, 5).astype(np.float16), np.array(-3, np.int64)],
         {"exclusive": 1, "reverse": 1}, consts=[1]),
    # ArgMax / ArgMin: CANN ArgMaxV2 / ArgMin (first of equal extremes); NaN as the CPU EP: rank >= 2, a NaN first
    # element wins and a later NaN never does (SelectV2(NotEqual(x, x), +-inf edge, x)); 1-D, the first NaN wins
    Case("arg_max", "ArgMax", [f32(4, 33)], {"axis": 1}, opset=13),
    Case("arg_max_nan_ties", "ArgMax", [np.array([[1, np.nan, 3, np.nan], [np.nan, 5, 1, 2], [3, 1, 5, np.nan],
                                                  [2, 2, -np.inf, 2], [np.nan, np.nan, 1, 1],
                                                  [-np.inf, np.nan, -np.inf, 0], [np.inf, np.nan, np.inf, 1],
                                                  [-0.0, 0.0, -1, np.nan]], np.float32)],
         {"axis": 1, "keepdims": 0}, opset=13),
    Case("arg_min_nan_ties", "ArgMin", [np.array([[1, np.nan, 3, np.nan], [np.nan, 5, 1, 2], [3, 1, 5, np.nan],
                                                  [2, 2, np.inf, 2], [np.nan, np.nan, 1, 1],
                                                  [np.inf, np.nan, np.inf, 9], [-np.inf, np.nan, -np.inf, 1],
                                                  [0.0, -0.0, 1, np.nan]], np.float32)],
         {"axis": -1}, opset=13),
    Case("arg_max_axis0_nan_columns", "ArgMax", [np.where(boolean(6, 5) & boolean(6, 5), np.nan, f32(6, 5))],
         {"axis": 0}, opset=13),
    Case("arg_min_neg_axis_3d", "ArgMin", [f32(3, 7, 4)], {"axis": -2, "keepdims": 0}, opset=13),
    Case("arg_max_f16_ties", "ArgMax", [np.round(f32(5, 9)).astype(np.float16)], {"axis": 1}, opset=13),
    Case("arg_min_f16_nan", "ArgMin", [np.where(boolean(4, 6), np.nan, f32(4, 6)).astype(np.float16)],
         {"axis": 0, "keepdims": 0}, opset=13),
    Case("arg_max_1d_scalar", "ArgMax", [f32(17)], {"keepdims": 0}, opset=13),
    Case("arg_min_1d_nan", "ArgMin", [np.array([1, -9, 3, np.nan, -np.inf, np.nan], np.float32)], opset=13),
    Case("arg_max_1d_nan_first_f16", "ArgMax", [np.array([np.nan, 9, np.inf, np.nan], np.float16)],
         {"keepdims": 0}, opset=13),
    Case("arg_max_1x6_nan", "ArgMax", [np.array([[1, 9, 3, np.nan, 2, np.nan]], np.float32)], {"axis": 1},
         opset=13),
    Case("arg_max_int32", "ArgMax", [i64(5, 8).astype(np.int32)], {"axis": 1, "keepdims": 0}, opset=13),
    Case("arg_min_int64_opset11", "ArgMin", [i64(4, 6, 3)], {"axis": 2}, opset=11),
    Case("arg_min_select_first_opset12", "ArgMin", [np.round(f32(3, 8))], {"axis": 1, "select_last_index": 0},
         opset=12),
    # Gelu (opset 20): CANN GeluV2 with ONNX's approximate ("none": erf; "tanh")
    Case("gelu", "Gelu", [f32(4, 33, low=-7, high=7)], exact=False),
    Case("gelu_tanh", "Gelu", [f32(4, 33, low=-7, high=7)], {"approximate": "tanh"}, exact=False),
    Case("gelu_f16", "Gelu", [f32(3, 7).astype(np.float16)], exact=False),
    Case("gelu_tanh_f16", "Gelu", [f32(3, 7).astype(np.float16)], {"approximate": "tanh"}, exact=False),
    Case("add_bcast", "Add", [f32(4, 1), f32(1, 5)]),
    Case("sub_bcast_rank", "Sub", [f32(2, 3, 4), f32(4)]),
    Case("mul_scalar", "Mul", [f32(3, 4), np.float32(2.5)]),
    Case("mul_int64_bcast", "Mul", [i64(3, 1), i64(1, 4)]),
    Case("div_bcast", "Div", [f32(3, 4), f32(3, 1, low=0.5, high=2)]),
    Case("equal_int64", "Equal", [i64(6, 1, high=2), i64(1, 3, high=2)]),
    Case("equal_bool", "Equal", [boolean(2, 3), boolean(2, 3)]),
    Case("less_f32", "Less", [f32(3, 4), np.float32(0)]),
    Case("less_equal", "LessOrEqual", [f32(3, 4).round(), f32(4).round()]),
    Case("greater_int64", "Greater", [i64(3, 4), i64(1)]),
    Case("greater_equal", "GreaterOrEqual", [f32(3, 4).round(), f32(3, 1).round()]),
    Case("and", "And", [boolean(3, 4), boolean(1, 4)]),
    Case("or", "Or", [boolean(3, 1), boolean(3, 4)]),
    Case("where_f32", "Where", [boolean(3, 1), f32(3, 4), np.float32(0)]),
    Case("where_int64", "Where", [boolean(4), i64(4), np.int64(0)]),
    Case("gemm_bias", "Gemm", [f32(5, 7), f32(7, 3), f32(3)], exact=False),
    Case("gemm_trans", "Gemm", [f32(7, 5), f32(3, 7), f32(1, 3)], {"transA": 1, "transB": 1}, exact=False),
    Case("gemm_full_c", "Gemm", [f32(5, 7), f32(7, 3), f32(5, 3)], exact=False),
    Case("gemm_no_c", "Gemm", [f32(5, 7), f32(7, 3)], exact=False),
    Case("gemm_alpha_no_c", "Gemm", [f32(5, 7), f32(7, 3)], {"alpha": 0.5}, exact=False),
    Case("gemm_alpha_bias", "Gemm", [f32(5, 7), f32(7, 3), f32(3)], {"alpha": -1.75}, exact=False),
    Case("gemm_beta_column_c", "Gemm", [f32(5, 7), f32(7, 3), f32(5, 1)], {"beta": 0.35}, exact=False),
    Case("gemm_alpha_beta_trans", "Gemm", [f32(7, 5), f32(3, 7), f32(5, 3)],
         {"alpha": 0.25, "beta": 3.0, "transA": 1, "transB": 1}, exact=False),
    Case("gemm_alpha_beta_f16", "Gemm", [f32(4, 6).astype(np.float16), f32(6, 3).astype(np.float16),
                                         f32(1, 3).astype(np.float16)], {"alpha": 0.5, "beta": 2.0}, exact=False),
    Case("reduce_sum_axis", "ReduceSum", [f32(4, 6, 3), np.array([1], np.int64)], {"keepdims": 0}, consts=[1],
         exact=False),
    Case("reduce_sum_keep_neg", "ReduceSum", [f32(4, 6), np.array([-1], np.int64)], consts=[1], exact=False),
    Case("reduce_sum_all", "ReduceSum", [f32(4, 6), np.zeros(0, np.int64)], {"keepdims": 0}, consts=[1],
         exact=False),
    Case("reduce_sum_noop", "ReduceSum", [f32(4, 6), np.zeros(0, np.int64)], {"noop_with_empty_axes": 1},
         consts=[1]),
    Case("reduce_sum_int64", "ReduceSum", [i64(4, 6), np.array([0], np.int64)], {"keepdims": 0}, consts=[1]),
    Case("reduce_prod_axis", "ReduceProd", [f32(4, 6, 3, low=0.5, high=1.5), np.array([1], np.int64)],
         {"keepdims": 0}, consts=[1], exact=False),
    Case("reduce_prod_int64_opset13_attr", "ReduceProd", [i64(4, 5)], {"axes": [0]}, opset=13),
    Case("reduce_sum_square", "ReduceSumSquare", [f32(4, 6, 3), np.array([-1], np.int64)], consts=[1],
         exact=False),
    Case("reduce_l2_f16", "ReduceL2", [f32(4, 6).astype(np.float16), np.array([0], np.int64)], {"keepdims": 0},
         consts=[1], exact=False),
    Case("reduce_l2_all_opset13", "ReduceL2", [f32(3, 5)], {"keepdims": 0}, opset=13, exact=False),
    Case("reduce_mean_axis", "ReduceMean", [f32(4, 6, 3), np.array([1], np.int64)], {"keepdims": 0}, consts=[1],
         exact=False),
    Case("reduce_mean_two_axes_neg", "ReduceMean", [f32(2, 5, 3, 4), np.array([-1, 1], np.int64)], consts=[1],
         exact=False),
    Case("reduce_mean_all", "ReduceMean", [f32(4, 6), np.zeros(0, np.int64)], {"keepdims": 0}, consts=[1],
         exact=False),
    Case("reduce_mean_absent_axes", "ReduceMean", [f32(3, 7)], exact=False),
    Case("reduce_mean_noop", "ReduceMean", [f32(4, 6), np.zeros(0, np.int64)], {"noop_with_empty_axes": 1},
         consts=[1]),
    Case("reduce_mean_f16", "ReduceMean", [f32(8, 33).astype(np.float16), np.array([1], np.int64)], consts=[1],
         exact=False),
    Case("reduce_mean_opset13_attr", "ReduceMean", [f32(4, 6, 5)], {"axes": [0, 2], "keepdims": 0}, exact=False,
         opset=13),
    Case("reduce_mean_opset13_all", "ReduceMean", [f32(4, 6)], exact=False, opset=13),
    Case("reduce_mean_opset17_f16", "ReduceMean", [f32(6, 10).astype(np.float16)], {"axes": [-1]}, exact=False,
         opset=17),
    Case("log_softmax", "LogSoftmax", [f32(4, 10)], {"axis": 1}, exact=False),
    Case("log_softmax_axis0", "LogSoftmax", [f32(4, 10)], {"axis": 0}, exact=False),
    Case("softmax", "Softmax", [f32(2, 3, 10)], exact=False),
    Case("softmax_axis1", "Softmax", [f32(4, 6, 5)], {"axis": 1}, exact=False),
    Case("softmax_f16", "Softmax", [f32(4, 17).astype(np.float16)], exact=False),
    Case("pow_square", "Pow", [f32(4, 33), np.float32(2.0)], consts=[1], exact=False),
    Case("pow_bcast", "Pow", [f32(3, 5, low=0.1, high=4), f32(5, low=-2, high=2)], exact=False),
    Case("pow_f64", "Pow", [f32(3, 4, low=0.1, high=4).astype(np.float64), np.float64(0.5)], exact=False),
    # an integer exponent (CANN's AICPU Pow: the double pow rounded once, as the CPU EP computes)
    Case("pow_f32_int32_exponent", "Pow", [f32(3, 5), RNG.integers(-6, 7, (5,)).astype(np.int32)]),
    Case("pow_f16_int64_exponent", "Pow", [f32(4, 3).astype(np.float16), RNG.integers(-4, 5, (4, 1))]),
    Case("pow_f64_int32_exponent", "Pow", [f32(2, 6).astype(np.float64), np.int32(3)]),
    Case("pow_int32", "Pow", [RNG.integers(-9, 10, (3, 4)).astype(np.int32),
                              RNG.integers(0, 9, (3, 4)).astype(np.int32)]),
    Case("pow_int64_int32_exponent", "Pow", [RNG.integers(-40, 41, (2, 5)), np.array([0, 1, 5, 9, 11], np.int32)]),
    Case("pad_constant", "Pad", [f32(2, 3, 4), np.array([0, 1, 2, 1, 0, 1], np.int64)], consts=[1]),
    Case("pad_constant_value_crop_f16", "Pad", [f32(3, 5).astype(np.float16), np.array([-1, 2, 1, -3], np.int64),
                                                np.float16(2.5)], consts=[1]),
    Case("pad_reflect", "Pad", [f32(2, 3, 4), np.array([1, 2, 1, 1, 1, 3], np.int64)], {"mode": "reflect"},
         consts=[1]),
    Case("pad_edge_int64", "Pad", [i64(3, 4), np.array([1, 1, 1, 2], np.int64)], {"mode": "edge"}, consts=[1]),
    Case("pad_axes", "Pad", [f32(2, 3, 4), np.array([2, 1], np.int64), None, np.array([-1], np.int64)],
         {"mode": "reflect"}, consts=[1, 3]),
    Case("tile", "Tile", [f32(2, 3), np.array([2, 3], np.int64)], consts=[1]),
    Case("tile_computed_repeats_bool", "Tile", [boolean(2, 1, 3), np.array([1, 4, 2], np.int64)]),
    Case("tile_int64_identity", "Tile", [i64(3, 2), np.array([1, 1], np.int64)], consts=[1]),
    Case("expand", "Expand", [f32(3, 1), np.array([2, 3, 4], np.int64)], consts=[1]),
    Case("expand_bidirectional", "Expand", [f32(2, 1, 3), np.array([4, 1], np.int64)], consts=[1]),
    Case("expand_int64_computed_shape", "Expand", [i64(1, 5), np.array([3, 5], np.int64)]),
    Case("expand_bool_noop", "Expand", [boolean(2, 3), np.array([1, 1], np.int64)], consts=[1]),
    Case("expand_f16_scalar", "Expand", [np.float16(1.5), np.array([2, 2], np.int64)], consts=[1]),
    Case("gather_select", "Gather", [f32(4, 6, 3), np.array(2, np.int64)], {"axis": 1}, consts=[1]),
    Case("gather_select_negative", "Gather", [f32(5, 3), np.array(-1, np.int64)], consts=[1]),
    Case("gather_run_2d_indices", "Gather", [i64(3, 8), np.array([[2, 3], [4, 5]], np.int64)], {"axis": -1},
         consts=[1]),
    Case("gather_full_run_bool", "Gather", [boolean(3, 2), np.array([0, 1, 2], np.int64)], consts=[1]),
    Case("gather_embedding_token_ids", "Gather", [f32(20, 8), RNG.integers(-20, 20, (4, 5))]),
    Case("gather_any_indices_middle_axis_f16", "Gather",
         [f32(3, 7, 4).astype(np.float16), np.array([6, 0, 0, -1, 2], np.int64)], {"axis": 1}, consts=[1]),
    Case("gather_any_indices_last_axis_int32", "Gather",
         [RNG.integers(-9, 9, (2, 3, 5)).astype(np.int32), np.array([[4, 1], [1, 4]], np.int64)], {"axis": 2}),
    Case("gather_any_indices_1d", "Gather", [f32(9), np.array([3, 3, 8], np.int64)]),
    Case("gather_nd_adaptive_pool_windows", "GatherND",
         [f32(7, 7, 2, 3), np.array([[[0, 0], [0, 1]], [[6, 6], [-1, 0]], [[3, 4], [3, 5]]], np.int64)], consts=[1]),
    Case("gather_nd_full_tuples_f16", "GatherND",
         [f32(4, 5).astype(np.float16), np.array([[3, 4], [0, 0], [3, 4]], np.int64)]),
    Case("gather_nd_run_of_rows", "GatherND", [f32(6, 3), np.array([[2], [3], [4]], np.int64)], consts=[1]),
    Case("gather_nd_batch_dims_1", "GatherND",
         [f32(3, 5, 4), np.array([[[4], [0]], [[-1], [2]], [[1], [1]]], np.int64)], {"batch_dims": 1}),
    Case("gather_nd_batch_dims_2_tuples_int32", "GatherND",
         [RNG.integers(-9, 9, (2, 3, 4, 5)).astype(np.int32),
          np.stack([RNG.integers(0, 4, (2, 3, 2)), RNG.integers(-5, 5, (2, 3, 2))], -1)], {"batch_dims": 2}),
    Case("clip", "Clip", [f32(4, 6), np.float32(-1.5), np.float32(0.75)], consts=[1, 2]),
    Case("clip_min_only_f16", "Clip", [f32(3, 5).astype(np.float16), np.float16(0.5)], consts=[1]),
    Case("clip_max_only_int64", "Clip", [i64(2, 9), np.array(-100, np.int64)[()], np.array(2, np.int64)],
         consts=[1, 2]),
    Case("clip_min_above_max", "Clip", [f32(3, 4), np.float32(1.0), np.float32(-1.0)], consts=[1, 2]),
    Case("clip_no_bounds", "Clip", [f32(2, 3)]),
    Case("scatter_nd_add_embedding_backward", "ScatterND",
         [np.zeros((20, 8), np.float32), RNG.integers(0, 20, (4, 5, 1)), f32(4, 5, 8)], {"reduction": "add"}),
    Case("scatter_nd_add_repeated", "ScatterND",
         [f32(6, 3), np.array([[1], [4], [1], [1]], np.int64), f32(4, 3)],
         {"reduction": "add"}),
    Case("scatter_nd_add_full_index_int32", "ScatterND",
         [RNG.integers(-5, 5, (3, 4)).astype(np.int32), np.array([[0, 1], [2, 3], [0, 1]], np.int64),
          np.array([7, -2, 5], np.int32)], {"reduction": "add"}),
    Case("scatter_nd_none_rows", "ScatterND", [f32(6, 3), np.array([[4], [0], [-1]], np.int64), f32(3, 3)]),
    Case("scatter_nd_none_elements_f16", "ScatterND",
         [f32(3, 4).astype(np.float16), np.array([[0, 1], [2, -1], [1, 0]], np.int64),
          f32(3).astype(np.float16)]),
    Case("scatter_nd_none_bool_batch", "ScatterND", [boolean(4, 5), np.array([[[3]], [[1]]], np.int64),
                                                     boolean(2, 1, 5)]),
    Case("scatter_nd_none_int64", "ScatterND", [i64(2, 3, 4), np.array([[1, 2], [0, 0]], np.int64), i64(2, 4)]),
    Case("concat", "Concat", [f32(2, 3), f32(2, 5), f32(2, 1)], {"axis": 1}),
    Case("concat_axis0_int64", "Concat", [i64(1, 4), i64(3, 4)], {"axis": -2}),
    Case("concat_one_input", "Concat", [f32(2, 3)], {"axis": 0}),
    Case("concat_with_empty_f16", "Concat", [f32(0, 3).astype(np.float16), f32(2, 3).astype(np.float16),
                                             f32(1, 3).astype(np.float16)], {"axis": 0}),
    Case("concat_3d_bool", "Concat", [boolean(2, 1, 3), boolean(2, 2, 3)], {"axis": 1}),
    Case("split_input", "Split", [f32(4, 7), np.array([2, 4, 1], np.int64)], {"axis": 1}, consts=[1], outputs=3),
    Case("split_equal", "Split", [f32(6, 2)], outputs=3, opset=13),
    Case("split_num_outputs_uneven", "Split", [f32(2, 7)], {"axis": -1, "num_outputs": 3}, outputs=3),
    Case("split_zero_piece_int64", "Split", [i64(5, 2), np.array([0, 5], np.int64)], consts=[1], outputs=2),
    Case("split_opset11_attr", "Split", [f32(3, 6)], {"axis": 1, "split": [1, 5]}, outputs=2, opset=11),
    Case("reduce_max_axis", "ReduceMax", [f32(4, 6, 3), np.array([1], np.int64)], {"keepdims": 0}, consts=[1]),
    Case("reduce_max_opset13_attr", "ReduceMax", [f32(4, 6)], {"axes": [-1]}, opset=13),
    Case("reduce_max_all_int64", "ReduceMax", [i64(4, 6)]),
    Case("reduce_max_bool", "ReduceMax", [boolean(4, 6, 3), np.array([1], np.int64)], {"keepdims": 0}, consts=[1]),
    Case("reduce_max_bool_all_false_rows", "ReduceMax", [np.array([[0, 0, 0], [0, 1, 0]], bool)]),
    Case("reduce_min_bool", "ReduceMin", [boolean(4, 6, 3), np.array([0, 2], np.int64)], consts=[1]),
    Case("reduce_min_bool_all", "ReduceMin", [np.array([[1, 1, 1], [1, 0, 1]], bool)], {"keepdims": 0}),
    Case("reduce_min_f16", "ReduceMin", [f32(5, 9).astype(np.float16), np.array([0], np.int64)], consts=[1]),
    Case("reduce_min_two_axes", "ReduceMin", [f32(2, 3, 4), np.array([0, 2], np.int64)], consts=[1]),
    # Dropout in training mode draws CANN's masks (tests/cann/test_dropout_on_cann.py); here its identities:
    # ratio 0 in training mode, and training_mode fed false
    Case("dropout_ratio0_training", "Dropout", [f32(4, 33), np.float32(0.0), np.array(True)], consts=[1, 2],
         outputs=2, opset=13),
    Case("dropout_training_fed_false_f16", "Dropout", [f32(3, 7).astype(np.float16), np.float32(0.5), np.array(False)],
         consts=[1], outputs=2, opset=13),
    Case("layer_norm", "LayerNormalization", [f32(4, 6, 32), f32(32), f32(32)], exact=False, outputs=3),
    Case("layer_norm_axis1_no_bias", "LayerNormalization", [f32(3, 5, 70), f32(5, 70)], {"axis": 1, "epsilon": 1e-3},
         consts=[1], exact=False, outputs=3),
    # an optional output named "" between produced ones (ORT gives the kernel no tensor for it)
    Case("layer_norm_no_mean", "LayerNormalization", [f32(4, 6, 32), f32(32), f32(32)], exact=False, outputs=3,
         unnamed=[1]),
    Case("layer_norm_y_only", "LayerNormalization", [f32(8, 16), f32(16), f32(16)], {"axis": -1}, exact=False),
    # Y only: the CPU EP rounds a float16 input's Mean and InvStdDev to float16 values (test_layer_norm_f16_statistics)
    Case("layer_norm_f16", "LayerNormalization", [f32(4, 24).astype(np.float16), f32(24).astype(np.float16),
                                                  f32(24).astype(np.float16)], exact=False),
    # BatchNormalization: training mode (BatchNormV3, Axpy + Muls for ONNX's population running_var) at any
    # rank; inference of non-4-D X (BatchNorm over [N, C, S, 1]); the CPU EP runs training mode (population var;
    # it crashes on running outputs named "": those cases are in test_placed_batch_norm_on_cann.py)
    *(Case(f"batch_norm_train_{len(shape)}d", "BatchNormalization", [f32(*shape), f32(shape[1], low=0.5),
                                                                     f32(shape[1]), f32(shape[1]),
                                                                     f32(shape[1], low=0.5)],
           {"training_mode": 1, **attrs}, exact=False, outputs=3, opset=15)
      for shape, attrs in (((6, 4), {}), ((4, 3, 5), {"momentum": 0.7, "epsilon": 1e-3}),
                           ((2, 3, 4, 5), {"momentum": 0.0}), ((2, 3, 2, 3, 4), {"momentum": 1.0}))),
    Case("batch_norm_train_f16", "BatchNormalization", [f32(4, 3, 8).astype(np.float16), f32(3), f32(3), f32(3),
                                                        f32(3, low=0.5)],
         {"training_mode": 1}, exact=False, outputs=3, opset=15),
    Case("batch_norm_train_f16_scale_opset14", "BatchNormalization",
         [f32(2, 3, 4, 4).astype(np.float16), f32(3).astype(np.float16), f32(3).astype(np.float16), f32(3),
          f32(3, low=0.5)], {"training_mode": 1, "epsilon": 1e-2}, exact=False, outputs=3, opset=14),
    *(Case(f"batch_norm_infer_{len(shape)}d", "BatchNormalization", [f32(*shape), f32(shape[1]), f32(shape[1]),
                                                                     f32(shape[1]), f32(shape[1], low=0.5)],
           {"epsilon": 1e-3}, exact=False, opset=opset)
      for shape, opset in (((5, 4), 15), ((3, 4, 7), 13), ((2, 3, 2, 3, 2), 14))),
    Case("batch_norm_infer_f16", "BatchNormalization", [f32(3, 4, 7).astype(np.float16), f32(4), f32(4), f32(4),
                                                        f32(4, low=0.5)], exact=False, opset=15),
    Case("transpose_2d", "Transpose", [f32(3, 5)], {"perm": [1, 0]}),
    Case("transpose_5d", "Transpose", [f32(2, 1, 3, 2, 2)], {"perm": [2, 1, 0, 3, 4]}),
    Case("transpose_default_int64", "Transpose", [i64(2, 3, 4)]),
    Case("cast_int64_float", "Cast", [i64(3, 4, high=1000)], {"to": TP.FLOAT}),
    Case("cast_bool_int64", "Cast", [boolean(3, 4)], {"to": TP.INT64}),
    Case("cast_float_half", "Cast", [f32(3, 4)], {"to": TP.FLOAT16}),
    Case("cast_half_float", "Cast", [f32(3, 4).astype(np.float16)], {"to": TP.FLOAT}),
    Case("cast_float_int32", "Cast", [f32(3, 4, low=-100, high=100)], {"to": TP.INT32}),
    Case("reshape", "Reshape", [f32(2, 3, 4), np.array([0, -1], np.int64)], consts=[1]),
    Case("reshape_allowzero", "Reshape", [f32(2, 3, 4), np.array([4, 6], np.int64)], {"allowzero": 1}, consts=[1]),
    Case("squeeze_axes", "Squeeze", [f32(2, 1, 3), np.array([1], np.int64)], consts=[1]),
    Case("squeeze_all", "Squeeze", [f32(1, 3, 1)]),
    Case("unsqueeze", "Unsqueeze", [i64(3), np.array([0, -1], np.int64)], consts=[1]),
    Case("flatten", "Flatten", [f32(2, 3, 4)], {"axis": 2}),
    Case("identity_bool", "Identity", [boolean(5)]),
    Case("gather_elements", "GatherElements", [f32(4, 10), RNG.integers(0, 10, (4, 1))], {"axis": 1}),
    Case("gather_elements_axis0", "GatherElements", [i64(4, 3), RNG.integers(0, 4, (2, 3))], {"axis": 0}),
    Case("gather_elements_f16_int32_indices", "GatherElements",
         [f32(3, 5, 2).astype(np.float16), RNG.integers(0, 5, (3, 7, 2)).astype(np.int32)], {"axis": -2}),
    Case("gather_elements_label_pick", "GatherElements", [f32(8, 10), RNG.integers(0, 10, (8, 1))], {"axis": 1},
         consts=[1]),
    Case("scatter_elements_int32_mul", "ScatterElements",
         [RNG.integers(-4, 4, (5, 3)).astype(np.int32), np.array([[4, 0, 1], [0, 0, 2]], np.int64),
          RNG.integers(-3, 3, (2, 3)).astype(np.int32)], {"axis": 0, "reduction": "mul"}),
    Case("scatter_elements", "ScatterElements", [f32(4, 10), RNG.permutation(10)[:3][None].repeat(4, 0),
                                                 f32(4, 3)], {"axis": 1}),
    Case("scatter_elements_add", "ScatterElements", [np.zeros((6, 16), np.float32),
                                                     RNG.integers(0, 16, (6, 4)), f32(6, 4)],
         {"axis": 1, "reduction": "add"}),
    Case("slice", "Slice", [f32(8, 16, 3, 3), np.array([0, -2], np.int64), np.array([2**62, 2**62], np.int64),
                            np.array([2, 3], np.int64)], consts=[1, 2, 3]),
    Case("slice_steps1", "Slice", [f32(4, 5), np.array([1], np.int64), np.array([3], np.int64),
                                   np.array([0], np.int64), np.array([1], np.int64)], consts=[1, 2, 3, 4]),
    Case("slice_steps2", "Slice", [f32(6, 7), np.array([1, 0], np.int64), np.array([6, 7], np.int64),
                                   np.array([0, 1], np.int64), np.array([2, 3], np.int64)], consts=[1, 2, 3, 4]),
    Case("slice_flip", "Slice", [f32(2, 5, 3), np.array([-1], np.int64), np.array([-2**63], np.int64),
                                 np.array([1], np.int64), np.array([-1], np.int64)], consts=[1, 2, 3, 4]),
    Case("slice_negative_steps_clamped", "Slice", [f32(4, 9).astype(np.float16), np.array([100, 7], np.int64),
                                                   np.array([-100, 1], np.int64), np.array([0, -1], np.int64),
                                                   np.array([-3, -2], np.int64)],
         consts=[1, 2, 3, 4]),
    Case("slice_steps_fed", "Slice", [i64(5, 6, high=100), np.array([4, 0], np.int64), np.array([-6, 6], np.int64),
                                      np.array([0, 1], np.int64), np.array([-1, 4], np.int64)]),
    Case("slice_steps_fed_unit", "Slice", [boolean(5, 6), np.array([1, 1], np.int64), np.array([4, 5], np.int64),
                                           np.array([0, 1], np.int64), np.array([1, 1], np.int64)]),
    Case("slice_steps_empty", "Slice", [f32(4, 5), np.array([1], np.int64), np.array([3], np.int64),
                                        np.array([1], np.int64), np.array([-1], np.int64)], consts=[1, 2, 3, 4]),
    Case("conv_transpose", "ConvTranspose", [f32(2, 4, 5, 5), f32(4, 3, 3, 3)], {"pads": [1, 1, 1, 1]}, exact=False),
    Case("conv_transpose_stride_bias", "ConvTranspose", [f32(1, 2, 3, 4), f32(2, 3, 3, 3), f32(3)],
         {"strides": [2, 2], "output_padding": [1, 0]}, exact=False),
    Case("conv_transpose_group", "ConvTranspose", [f32(1, 4, 4, 4), f32(4, 1, 2, 2)], {"group": 2}, exact=False),
    Case("conv_transpose_1d_dilated_bias", "ConvTranspose", [f32(2, 4, 10), f32(4, 3, 3), f32(3)],
         {"pads": [4, 4], "dilations": [4]}, exact=False),
    Case("conv_transpose_1d_stride_output_padding", "ConvTranspose", [f32(2, 4, 7), f32(4, 3, 3)],
         {"strides": [2], "output_padding": [1]}, exact=False),
    Case("conv_transpose_same_upper_odd", "ConvTranspose", [f32(1, 2, 4, 5), f32(2, 3, 4, 3)],
         {"auto_pad": "SAME_UPPER", "strides": [2, 3]}, exact=False),
    Case("conv_transpose_same_lower_odd", "ConvTranspose", [f32(1, 2, 4, 5), f32(2, 3, 4, 3), f32(3)],
         {"auto_pad": "SAME_LOWER", "strides": [2, 3]}, exact=False),
    Case("conv_transpose_valid_1d", "ConvTranspose", [f32(2, 2, 6), f32(2, 3, 3)], {"auto_pad": "VALID",
                                                                               "strides": [2]}, exact=False),
    Case("conv_transpose_output_shape_odd", "ConvTranspose", [f32(1, 2, 3, 4), f32(2, 2, 3, 3)],
         {"strides": [2, 2], "output_shape": [6, 8]}, exact=False),
    Case("conv_transpose_output_shape_extends", "ConvTranspose", [f32(1, 1, 3, 3), f32(1, 2, 3, 3), f32(2)],
         {"strides": [3, 2], "output_shape": [10, 8]}, exact=False),
    Case("conv_transpose_output_shape_full_rank_1d", "ConvTranspose", [f32(1, 2, 5), f32(2, 2, 4)],
         {"strides": [2], "output_shape": [1, 2, 9], "pads": [5, 5]}, exact=False),
    Case("conv_transpose_1d_group_f16", "ConvTranspose", [f32(1, 4, 9).astype(np.float16),
                                                          f32(4, 1, 2).astype(np.float16)], {"group": 2}, exact=False),
    Case("conv_1d", "Conv", [f32(2, 4, 12), f32(3, 4, 3)], exact=False),
    Case("conv_1d_bias_pads_dilations", "Conv", [f32(2, 4, 12), f32(3, 4, 3), f32(3)],
         {"pads": [2, 2], "dilations": [2], "kernel_shape": [3]}, exact=False),
    Case("conv_1d_asymmetric_pads_stride", "Conv", [f32(1, 3, 17), f32(5, 3, 4)], {"pads": [0, 3], "strides": [3]},
         exact=False),
    Case("conv_1d_weight_grad_form", "Conv", [f32(4, 2, 32), f32(3, 2, 16)], {"strides": [4], "kernel_shape": [16]},
         exact=False),
    Case("conv_1d_group", "Conv", [f32(2, 6, 10), f32(4, 3, 3), f32(4)], {"group": 2, "pads": [1, 1]}, exact=False),
    Case("conv_1d_depthwise", "Conv", [f32(1, 4, 10), f32(4, 1, 5)], {"group": 4, "pads": [2, 2]}, exact=False),
    Case("conv_1d_f16", "Conv", [f32(2, 4, 12).astype(np.float16), f32(3, 4, 3).astype(np.float16),
                                 f32(3).astype(np.float16)], {"pads": [4, 4], "dilations": [4]}, exact=False),
    Case("conv_1d_same_upper", "Conv", [f32(1, 3, 11), f32(2, 3, 4)], {"auto_pad": "SAME_UPPER"}, exact=False),
    Case("conv_1d_same_lower_stride", "Conv", [f32(1, 3, 11), f32(2, 3, 4)], {"auto_pad": "SAME_LOWER", "strides": [2]},
         exact=False),
    Case("conv_1d_valid", "Conv", [f32(1, 3, 11), f32(2, 3, 4)], {"auto_pad": "VALID", "strides": [2]}, exact=False),
    Case("conv_2d_pads_left_ne_bottom", "Conv", [f32(1, 2, 6, 7), f32(3, 2, 3, 3), f32(3)], {"pads": [1, 0, 1, 0]},
         exact=False),
    Case("conv_2d_same_lower", "Conv", [f32(1, 2, 6, 7), f32(3, 2, 2, 3)], {"auto_pad": "SAME_LOWER"}, exact=False),
    Case("conv_2d_symmetric_on_the_ep", "Conv", [f32(1, 2, 6, 7), f32(3, 2, 3, 3)], {"pads": [1, 1, 1, 1]},
         exact=False),
    Case("max_pool", "MaxPool", [f32(2, 3, 8, 8)], {"kernel_shape": [2, 2], "strides": [2, 2]}),
    Case("max_pool_pads", "MaxPool", [f32(1, 2, 5, 5)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    Case("max_pool_ceil", "MaxPool", [f32(1, 2, 5, 5)], {"kernel_shape": [2, 2], "strides": [2, 2],
                                                        "ceil_mode": 1}),
    Case("average_pool", "AveragePool", [f32(2, 3, 8, 8)], {"kernel_shape": [2, 2], "strides": [2, 2]}, exact=False),
    Case("average_pool_pads_exclusive", "AveragePool", [f32(1, 2, 5, 5)], {"kernel_shape": [3, 3],
                                                                          "pads": [1, 1, 1, 1]}, exact=False),
    Case("average_pool_pads_inclusive", "AveragePool", [f32(1, 2, 5, 6)], {"kernel_shape": [3, 2], "strides": [2, 1],
                                                                          "pads": [1, 1, 0, 0],
                                                                          "count_include_pad": 1}, exact=False),
    Case("average_pool_ceil", "AveragePool", [f32(1, 2, 5, 5)], {"kernel_shape": [2, 2], "strides": [2, 2],
                                                                "ceil_mode": 1}, exact=False),
    Case("max_pool_1d", "MaxPool", [f32(2, 3, 9)], {"kernel_shape": [3], "strides": [2], "pads": [1, 0]}),
    Case("max_pool_1d_ceil", "MaxPool", [f32(1, 2, 8)], {"kernel_shape": [2], "strides": [3], "ceil_mode": 1}),
    Case("max_pool_same_upper", "MaxPool", [f32(1, 2, 7, 6)], {"kernel_shape": [3, 2], "strides": [2, 2],
                                                              "auto_pad": "SAME_UPPER"}),
    Case("max_pool_same_lower", "MaxPool", [f32(1, 2, 7, 6)], {"kernel_shape": [2, 3], "auto_pad": "SAME_LOWER"}),
    Case("max_pool_1d_valid", "MaxPool", [f32(1, 2, 10)], {"kernel_shape": [3], "strides": [4], "auto_pad": "VALID"}),
    Case("max_pool_uint8", "MaxPool", [RNG.integers(0, 256, (2, 3, 6, 7)).astype(np.uint8)],
         {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1]}),
    Case("max_pool_1d_int8_ceil", "MaxPool", [RNG.integers(-128, 128, (2, 2, 9)).astype(np.int8)],
         {"kernel_shape": [2], "strides": [2], "ceil_mode": 1}),
    Case("max_pool_3d", "MaxPool", [f32(2, 3, 4, 5, 6)], {"kernel_shape": [2, 2, 2], "strides": [2, 1, 2]}),
    Case("max_pool_3d_pads_ceil_f16", "MaxPool", [f32(1, 2, 5, 5, 4).astype(np.float16)],
         {"kernel_shape": [3, 2, 3], "strides": [2, 2, 2], "pads": [1, 0, 1, 1, 1, 2], "ceil_mode": 1}),
    Case("max_pool_3d_dilated", "MaxPool", [f32(1, 2, 6, 6, 7)], {"kernel_shape": [2, 3, 2], "dilations": [2, 1, 3],
                                                                 "pads": [1, 1, 0, 1, 2, 1]}),
    Case("max_pool_2d_dilated", "MaxPool", [f32(2, 3, 9, 8)], {"kernel_shape": [3, 2], "dilations": [2, 3],
                                                              "strides": [1, 2]}),
    Case("max_pool_1d_dilated_valid", "MaxPool", [f32(1, 2, 13)], {"kernel_shape": [3], "dilations": [4],
                                                                  "auto_pad": "VALID"}),
    Case("average_pool_3d", "AveragePool", [f32(2, 3, 4, 5, 6)], {"kernel_shape": [2, 2, 3], "strides": [2, 1, 3]},
         exact=False),
    Case("average_pool_3d_pads_exclusive_ceil", "AveragePool", [f32(1, 2, 5, 5, 4)],
         {"kernel_shape": [3, 2, 3], "strides": [2, 2, 2], "pads": [1, 0, 2, 1, 1, 0], "ceil_mode": 1},
         exact=False),
    Case("average_pool_3d_inclusive_f16", "AveragePool", [f32(1, 2, 4, 6, 5).astype(np.float16)],
         {"kernel_shape": [3, 3, 3], "pads": [1, 1, 1, 1, 1, 1], "count_include_pad": 1}, exact=False),
    Case("average_pool_1d", "AveragePool", [f32(2, 3, 9)], {"kernel_shape": [4], "pads": [2, 1]}, exact=False),
    Case("average_pool_1d_inclusive", "AveragePool", [f32(1, 2, 9)], {"kernel_shape": [3], "strides": [2],
                                                                      "pads": [1, 1], "count_include_pad": 1},
         exact=False),
    Case("average_pool_same_upper", "AveragePool", [f32(1, 2, 7, 6)], {"kernel_shape": [3, 3], "strides": [2, 2],
                                                                      "auto_pad": "SAME_UPPER"}, exact=False),
    Case("average_pool_same_lower_inclusive", "AveragePool", [f32(1, 2, 6, 5)],
         {"kernel_shape": [2, 3], "auto_pad": "SAME_LOWER", "count_include_pad": 1}, exact=False),
    Case("average_pool_valid", "AveragePool", [f32(1, 2, 7, 6)], {"kernel_shape": [3, 2], "strides": [2, 3],
                                                                 "auto_pad": "VALID"}, exact=False),
    Case("average_pool_f16", "AveragePool", [f32(1, 3, 6, 6).astype(np.float16)], {"kernel_shape": [3, 3]},
         exact=False),
    # 3-D Conv: one CANN Conv3DV2
    Case("conv_3d", "Conv", [f32(2, 3, 4, 5, 6), f32(4, 3, 2, 3, 2), f32(4)],
         {"pads": [1, 0, 1, 1, 1, 0], "strides": [1, 2, 1], "dilations": [1, 1, 2]}, exact=False),
    Case("conv_3d_depthwise_f16", "Conv",
         [f32(1, 4, 5, 5, 5).astype(np.float16), f32(4, 1, 3, 3, 3).astype(np.float16)],
         {"group": 4, "pads": [1, 1, 1, 1, 1, 1]}, exact=False),
    Case("conv_3d_same_upper", "Conv", [f32(1, 2, 6, 6, 6), f32(2, 2, 3, 3, 3)],
         {"auto_pad": "SAME_UPPER", "strides": [2, 2, 2]}, exact=False),
    # 3-D ConvTranspose: Conv3DBackpropInputV2 (+ Add of B)
    Case("conv_transpose_3d_bias", "ConvTranspose", [f32(2, 3, 3, 4, 3), f32(3, 2, 2, 3, 2), f32(2)],
         {"strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1]}, exact=False),
    Case("conv_transpose_3d_group_output_padding", "ConvTranspose", [f32(1, 4, 3, 3, 3), f32(4, 1, 3, 3, 3)],
         {"group": 4, "strides": [2, 2, 2], "output_padding": [1, 1, 1]}, exact=False),
    Case("conv_transpose_3d_same_upper_f16", "ConvTranspose",
         [f32(1, 2, 3, 4, 5).astype(np.float16), f32(2, 2, 2, 2, 2).astype(np.float16)],
         {"auto_pad": "SAME_UPPER", "strides": [2, 2, 2]}, exact=False),
    # MaxPool's Indices: MaxPool3DWithArgmaxV2, then ONNX's indices (row- and column-major)
    Case("max_pool_indices", "MaxPool", [f32(2, 3, 5, 5)], {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2]},
         outputs=2),
    Case("max_pool_indices_column_major", "MaxPool", [f32(2, 3, 5, 6)],
         {"kernel_shape": [2, 2], "strides": [2, 2], "storage_order": 1}, outputs=2),
    Case("max_pool_indices_ceil_f16", "MaxPool", [f32(2, 2, 7, 6).astype(np.float16)],
         {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 1, 1, 1], "ceil_mode": 1}, outputs=2),
    Case("max_pool_indices_1d", "MaxPool", [f32(2, 3, 9)], {"kernel_shape": [3], "strides": [2], "pads": [1, 1]},
         outputs=2),
    Case("max_pool_unnamed_indices", "MaxPool", [f32(2, 3, 5, 5)], {"kernel_shape": [3, 3]}, outputs=2, unnamed=[1]),
    Case("max_pool_indices_3d", "MaxPool", [f32(2, 2, 4, 5, 6)],
         {"kernel_shape": [3, 2, 3], "strides": [1, 2, 2], "pads": [1, 1, 1, 1, 1, 1]}, outputs=2),
    # dilations: Conv3DV2 of ones, RealDiv by the divisors (where the CPU EP agrees with ONNX: the
    # edge cases file has the one it does not, against ONNX's reference)
    Case("average_pool_dilated_2d", "AveragePool", [f32(2, 3, 9, 8)],
         {"kernel_shape": [3, 2], "dilations": [2, 3], "pads": [1, 1, 2, 1]}, exact=False),
    Case("average_pool_dilated_3d_inclusive_ceil", "AveragePool", [f32(1, 2, 6, 7, 8)],
         {"kernel_shape": [2, 3, 2], "strides": [1, 2, 2], "dilations": [2, 2, 3], "pads": [1, 0, 1, 1, 1, 0],
          "count_include_pad": 0, "ceil_mode": 1}, exact=False),
    Case("average_pool_dilated_1d_inclusive_f16", "AveragePool", [f32(2, 3, 10).astype(np.float16)],
         {"kernel_shape": [3], "strides": [2], "dilations": [3], "pads": [2, 2], "count_include_pad": 1,
          "ceil_mode": 1}, exact=False),
    Case("constant_of_shape_fill", "ConstantOfShape", [np.array([3, 7], np.int64)],
         {"value": numpy_helper.from_array(np.array([2.5], np.float32))}),
    Case("constant_of_shape_zeros_int64", "ConstantOfShape", [np.array([300, 300], np.int64)],
         {"value": numpy_helper.from_array(np.array([0], np.int64))}, consts=[0]),
]


# CANN's GatherElements and ScatterElements are Ascend 950 only (ops-nn READMEs); on Atlas A2/A3 (the
# simulator's default SoC, Ascend910B1) the kernels take GatherElementsV2 / ScatterElementsV2, which
# have every placed type but int64: int64 cases stay on the CPU there. Every case of these ops runs
# again in a child process with ACLSIM_SOC_NAME=Ascend950PR (the "default" route).
ASCEND950 = "Ascend950PR"
GATHER_SCATTER = {"GatherElements", "ScatterElements"}


def on_910b(case) -> bool:
    return case.op not in GATHER_SCATTER or np.asarray(case.inputs[0]).dtype != np.int64


def check_case(case, tmp_path):
    model = case.model()
    cpu = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = cpu.run(None, case.feeds())
    session = cann_ep.session(model, profile_prefix=str(tmp_path / "p"))
    (entry,) = session.placement.nodes
    assert entry.where in ("placed", "cann_ep"), session.placement.summary()
    got = session.run(None, case.feeds())
    runs = cann_ep.node_runs(session)
    op_type = entry.placed_as if entry.where == "placed" else case.op
    assert [(r.op_type, r.provider) for r in runs if r.node == "node"] == [(op_type, PROVIDER)], runs
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        if case.exact or w.dtype.kind in "biu":
            np.testing.assert_array_equal(g.reshape(-1).view(np.uint8), w.reshape(-1).view(np.uint8))
        else:
            closeness = tolerances.check(g, w)
            assert closeness.ok, closeness.message


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES if on_910b(c)])
def test_placed_op_matches_the_cpu_ep(case, tmp_path):
    check_case(case, tmp_path)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES if c.op in GATHER_SCATTER])
def test_placed_op_on_ascend950(case, tmp_path):
    if os.environ.get("ACLSIM_SOC_NAME") != ASCEND950:
        pytest.skip("runs in the child of test_ascend950_ops_in_a_child (ACLSIM_SOC_NAME=Ascend950PR)")
    check_case(case, tmp_path)


def test_ascend950_ops_in_a_child(tmp_path):
    env = {**os.environ, "ACLSIM_SOC_NAME": ASCEND950}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                           "test_placed_op_on_ascend950", "--basetemp", str(tmp_path / "child")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert f"{sum(c.op in GATHER_SCATTER for c in CASES)} passed" in proc.stdout, proc.stdout[-2000:]


# IsNaN takes NotEqual(x, x) on a SoC without CANN IsNan (math/is_nan/README.md: Ascend 950, Atlas A2/A3 only):
# its cases again in a child on the Atlas training series.
WITHOUT_IS_NAN = "Ascend910A"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES if c.op == "IsNaN"])
def test_placed_is_nan_without_is_nan(case, tmp_path):
    if os.environ.get("ACLSIM_SOC_NAME") != WITHOUT_IS_NAN:
        pytest.skip("runs in the child of test_is_nan_not_equal_route_in_a_child (ACLSIM_SOC_NAME=Ascend910A)")
    check_case(case, tmp_path)


def test_is_nan_not_equal_route_in_a_child(tmp_path):
    env = {**os.environ, "ACLSIM_SOC_NAME": WITHOUT_IS_NAN}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                           "test_placed_is_nan_without_is_nan", "--basetemp", str(tmp_path / "child")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert f"{sum(c.op == 'IsNaN' for c in CASES)} passed" in proc.stdout, proc.stdout[-2000:]


def test_arg_max_select_last_index_reverses_and_subtracts(tmp_path):
    """select_last_index 1: floats launch NotEqual, SelectV2, StridedSlice, the arg op and Sub; integers the last
    three (the op counts of one run)."""
    from session_runs import launched_by

    for op, cann_op in (("ArgMax", "ArgMaxV2"), ("ArgMin", "ArgMin")):
        for x, want in ((f32(3, 5), {"NotEqual": 1, "SelectV2": 1, "StridedSlice": 1, cann_op: 1, "Sub": 1}),
                        (i64(3, 5), {"StridedSlice": 1, cann_op: 1, "Sub": 1})):
            case = Case("last", op, [x], {"axis": 1, "select_last_index": 1}, opset=13)
            session = cann_ep.session(case.model())
            (entry,) = session.placement.nodes
            assert entry.where == "placed", session.placement.summary()
            _, ops = launched_by(session, case.feeds())
            assert ops == want


def test_every_rule_is_covered_here():
    from ort_ops.rewrite.placement.ops import RULES

    covered = {c.op for c in CASES}
    assert set(RULES) <= covered, sorted(set(RULES) - covered)


def test_domain_of_placed_nodes():
    case = CASES[0]
    from ort_ops.rewrite.placement import place

    assert place(case.model()).graph.node[0].domain == CANN_DOMAIN


def test_layer_norm_f16_statistics(tmp_path):
    """A float16 LayerNormalization's Mean and InvStdDev (float32 with stash_type 1) from CANN's LayerNormV4 are
    float32 statistics of the exact inputs: within float32 rounding of the float64 values. (ORT's CPU EP returns
    them rounded to float16 values: 10 bits, so it is not the reference here.)"""
    x = f32(6, 40).astype(np.float16)
    case = Case("layer_norm_f16_stats", "LayerNormalization", [x, f32(40).astype(np.float16),
                                                               f32(40).astype(np.float16)], outputs=3)
    session = cann_ep.session(case.model(), profile_prefix=str(tmp_path / "p"))
    assert [n.where for n in session.placement.nodes] == ["placed"], session.placement.summary()
    _, mean, inv_std = session.run(None, case.feeds())
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(mean.ravel(), x64.mean(axis=1), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(inv_std.ravel(), 1 / np.sqrt(x64.var(axis=1) + 1e-5), rtol=2e-6)
    assert mean.dtype == inv_std.dtype == np.float32 and mean.shape == (6, 1)
