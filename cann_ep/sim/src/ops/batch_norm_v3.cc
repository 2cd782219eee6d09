// BatchNormV3, training form (hicann/ops-nn norm/batch_norm_v3: op_graph/batch_norm_v3_proto.h REG_OP(BatchNormV3),
// op_host/batch_norm_v3_def.cpp, README.md): (x, weight, bias, running_mean, running_var) -> (y, running_mean,
// running_var, save_mean, save_rstd); attributes epsilon (Float, 1e-5), momentum (Float, 0.1), is_training (Bool,
// true; the README: Atlas A2/A3 "only the training scenario", so false is not simulated:
// ACL_ERROR_OP_ATTR_NOT_MATCH). x and y: 4-D NCHW or 5-D NCDHW (the def's A2/A3 formats; the 950 configuration's
// NHWC / NDHWC / ND are not simulated: ACL_ERROR_FORMAT_NOT_MATCH); weight, bias, the running statistics and
// save_* 1-D [C]. The def's A2/A3 dtype rows (x = y, weight = bias, running_* in and out): (f32, f32, f32),
// (f16, f16, f32), (bf16, bf16, f32), (f16, f32, f32), (bf16, f32, f32); save_* float32. The 950 configuration's
// float16 / bfloat16 running statistics are not simulated (ACL_ERROR_UNSUPPORTED_DATA_TYPE, as on A2/A3). The
// op type is configured for ascend910b, ascend910_93 and ascend950 (def.cpp AddConfig; the SoC table).
//
// Numerics: the A2/A3 full-reduce kernel (op_kernel/batch_norm_v3_full_reduce.h, tiling
// op_host/batch_norm_v3_full_reduce_tiling.cpp), float32 with every operation rounded, per channel over the M =
// N * D * H * W elements in increasing (n, spatial) order:
//   save_mean = (sum x) / M; xc = x - save_mean; var = (sum xc * xc) / M (the population variance);
//   y = xc * (weight / sqrt(var + epsilon)) + bias;
//   running_mean' = running_mean * (1 - momentum) + save_mean * momentum;
//   running_var' = running_var * (1 - momentum) + var * (batchVarScale * momentum),
// batchVarScale = float(M / (M - 1)) computed in double (the *unbiased* variance, as PyTorch's running_var; M = 1:
// NaN, the kernel's 0.0 / 0.0). The kernel's power-of-two split of 1 / M (coefficient0 / coefficient1) is not
// modelled. save_rstd holds var on Atlas A2/A3 (README: "save_rstd 保存的是x方差") and 1 / sqrt(var + epsilon) on
// the Ascend 950 (README: the inverse standard deviation).
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "batch_norm_v3_checks.h"
#include "dtypes.h"
#include "internal.h"
#include "numerics.h"
#include "op_call.h"

namespace aclsim {
namespace {

const char* const kInputNames[] = {"x", "weight", "bias", "running_mean", "running_var"};
const char* const kOutputNames[] = {"y", "running_mean", "running_var", "save_mean", "save_rstd"};

// The def's Atlas A2/A3 rows (x, weight, running statistics).
bool dtype_row(aclDataType x, aclDataType weight, aclDataType running) {
  if (running != ACL_FLOAT) return false;
  if (x == ACL_FLOAT) return weight == ACL_FLOAT;
  return (x == ACL_FLOAT16 || x == ACL_BF16) && (weight == x || weight == ACL_FLOAT);
}

struct Params {
  int64_t channels, outer, inner;
  float epsilon, momentum;
  bool rstd_output;
};

void batch_norm_v3_train(const OpCall& c, const Params& p) {
  const OpTensor &x = c.in[0], &weight = c.in[1], &bias = c.in[2];
  const int64_t m = p.outer * p.inner;
  const float count = static_cast<float>(m);
  const float var_scale = m == 1 ? std::numeric_limits<float>::quiet_NaN()
                                 : static_cast<float>(static_cast<double>(m) / static_cast<double>(m - 1));
  const float reverse = fsub(1.0f, p.momentum);
  const float var_factor = fmul(var_scale, p.momentum);
  for (int64_t ch = 0; ch < p.channels; ++ch) {
    auto at = [&](int64_t n, int64_t i) { return (n * p.channels + ch) * p.inner + i; };
    float sum = 0.0f;
    for (int64_t n = 0; n < p.outer; ++n)
      for (int64_t i = 0; i < p.inner; ++i) sum = fadd(sum, load_float(x.dtype, x.data, at(n, i)));
    const float mean = fdiv(sum, count);
    float square_sum = 0.0f;
    for (int64_t n = 0; n < p.outer; ++n)
      for (int64_t i = 0; i < p.inner; ++i) {
        const float xc = fsub(load_float(x.dtype, x.data, at(n, i)), mean);
        square_sum = fadd(square_sum, fmul(xc, xc));
      }
    const float var = fdiv(square_sum, count);
    const float sd = std::sqrt(fadd(var, p.epsilon));
    const float w = fdiv(load_float(weight.dtype, weight.data, ch), sd);
    const float b = load_float(bias.dtype, bias.data, ch);
    for (int64_t n = 0; n < p.outer; ++n)
      for (int64_t i = 0; i < p.inner; ++i) {
        const float xc = fsub(load_float(x.dtype, x.data, at(n, i)), mean);
        store_float(c.out[0].dtype, c.out[0].data, at(n, i), fadd(fmul(xc, w), b));
      }
    const float rm = load_at<F32>(c.in[3].data, ch), rv = load_at<F32>(c.in[4].data, ch);
    store_at<F32>(c.out[1].data, ch, fadd(fmul(rm, reverse), fmul(mean, p.momentum)));
    store_at<F32>(c.out[2].data, ch, fadd(fmul(rv, reverse), fmul(var, var_factor)));
    store_at<F32>(c.out[3].data, ch, mean);
    store_at<F32>(c.out[4].data, ch, p.rstd_output ? fdiv(1.0f, sd) : var);
  }
}

}  // namespace

// BatchNormV3(x, weight, bias, running_mean, running_var; epsilon, momentum, is_training) -> (y, running_mean,
// running_var, save_mean, save_rstd).
aclError k_batch_norm_v3(const OpCall& c, Run* run) {
  const char* op = c.type.c_str();
  if (aclError rc = expect_counts(c, 5, 5)) return rc;
  const OpTensor &x = c.in[0], &weight = c.in[1];
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", x, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x)", x)) return rc;
  if (aclError rc = expect_same_dtype(c, "input 2 (bias)", c.in[2], "input 1 (weight)", weight)) return rc;
  if (aclError rc = expect_same_dtype(c, "input 4 (running_var)", c.in[4], "input 3 (running_mean)", c.in[3]))
    return rc;
  for (size_t o = 1; o < 3; ++o) {
    const std::string what = "output " + std::to_string(o) + " (" + kOutputNames[o] + ")";
    if (aclError rc = expect_same_dtype(c, what.c_str(), c.out[o], "input 3 (running_mean)", c.in[3])) return rc;
  }
  for (size_t o = 3; o < 5; ++o) {
    const std::string what = "output " + std::to_string(o) + " (" + kOutputNames[o] + ")";
    if (aclError rc = expect_dtype_in(c, what.c_str(), c.out[o], {ACL_FLOAT})) return rc;
  }
  if (!dtype_row(x.dtype, weight.dtype, c.in[3].dtype))
    return fail(
        ACL_ERROR_UNSUPPORTED_DATA_TYPE,
        "%s: x %s, weight %s, running_mean %s is not a dtype row of the op's definition (batch_norm_v3_def.cpp: "
        "float32 running statistics; weight float32 or x's type)",
        op, dtype_name(x.dtype), dtype_name(weight.dtype), dtype_name(c.in[3].dtype));
  if (c.attr_int("is_training", 1) == 0)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "%s: attribute is_training is false; Atlas A2/A3 support the training form only (README.md), the "
                "only one simulated",
                op);
  if (aclError rc = expect_nchw_or_ncdhw(op, {&x, &c.out[0]}, "x and y", "NHWC / NDHWC / ND")) return rc;
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", x.dims, "x's shape")) return rc;
  const int64_t channels = x.dims[1];
  if (aclError rc = expect_per_channel(c, 1, kInputNames, kOutputNames, channels)) return rc;
  Params p{channels,
           x.dims[0],
           1,
           c.attr_float("epsilon", 1e-5f),
           c.attr_float("momentum", 0.1f),
           std::strcmp(soc_family(), "ascend950") == 0};
  for (size_t d = 2; d < x.dims.size(); ++d) p.inner *= x.dims[d];
  if (p.outer * p.inner == 0)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 0 (x) of shape %s has no element per channel", op,
                shape_str(x.dims).c_str());
  *run = [c, p] { batch_norm_v3_train(c, p); };
  return ACL_SUCCESS;
}

ACLSIM_OPS(batch_norm_v3, {"BatchNormV3", k_batch_norm_v3})

}  // namespace aclsim
