// BatchNormGradV3, training form (hicann/ops-nn norm/batch_norm_grad_v3: op_graph/batch_norm_grad_v3_proto.h
// REG_OP(BatchNormGradV3), op_host/batch_norm_grad_v3_def.cpp, docs/aclnnBatchNormBackward.md's formula):
// (dy, x, weight, running_mean, running_var, save_mean, save_rstd) -> (dx, dweight, dbias); attributes
// is_training (Bool, default true), epsilon (Float, 1e-5), version (Int, 0; ignored). dy, x, dx: the
// def's formats NCHW and NCDHW (4-D / 5-D, channels at axis 1; the 950 configuration's NHWC / NDHWC are
// not simulated: ACL_ERROR_FORMAT_NOT_MATCH), one shape; weight, the four statistics, dweight and dbias
// 1-D [C]. The def's dtype rows (dy = x = dx; weight = dweight = dbias; running_*; save_* float32):
// (f32, f32, f32), (f16, f16, f16), (bf16, bf16, bf16), (f16, f32, f32), (bf16, f32, f32),
// (f16, f16, f32), (bf16, bf16, f32); others fail. The def configures ascend950, ascend910b and
// ascend910_93 (def.cpp:157, 227-228; the SoC table). Training mode reads save_mean and save_rstd, never
// running_mean / running_var; is_training false (the inference form) is not simulated.
//
// What save_rstd holds depends on the SoC's kernel: the Atlas A2/A3 kernel (op_kernel/
// batch_norm_grad_v3_base_common.h BroadCastWeightMeanVar, train_fullLoad.h) reads it as a variance:
// std = sqrt(save_rstd + epsilon); the Ascend 950 kernel (op_kernel/arch35, full_load_regbase.h) reads
// it as the inverse standard deviation rstd, epsilon unused. Numerics, float32 with every operation
// rounded, per channel over the elements in increasing (n, spatial) order (the A2/A3 kernel's steps):
//   db = sum dy, s = sum (x - save_mean) * dy, dw = s / std, k = ((s / std) / std) * (1 / M),
//   a = db * (1 / M), dx = (((dy - a) - (x - save_mean) * k) / std) * weight;  dweight = dw, dbias = db
// (M = N * D * H * W); on the 950 each "/ std" is "* rstd" (the arch35 kernel's own order was not
// modelled). One rounding per output.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "dtypes.h"
#include "internal.h"
#include "numerics.h"
#include "batch_norm_v3_checks.h"
#include "norm_grad_dtype_rows.h"
#include "op_call.h"

namespace aclsim {
namespace {

const char* const kInputNames[] = {"dy", "x", "weight", "running_mean", "running_var", "save_mean", "save_rstd"};
const char* const kOutputNames[] = {"dx", "dweight", "dbias"};

}  // namespace

aclError k_batch_norm_grad_v3(const OpCall& c, Run* run) {
  const char* op = c.type.c_str();
  if (aclError rc = expect_counts(c, 7, 3)) return rc;
  const OpTensor &dy = c.in[0], &x = c.in[1], &weight = c.in[2];
  if (aclError rc = expect_dtype_in(c, "input 0 (dy)", dy, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  if (aclError rc = expect_same_dtype(c, "input 1 (x)", x, "input 0 (dy)", dy)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (dx)", c.out[0], "input 0 (dy)", dy)) return rc;
  if (aclError rc = expect_same_dtype(c, "input 4 (running_var)", c.in[4], "input 3 (running_mean)", c.in[3]))
    return rc;
  for (size_t o = 1; o < 3; ++o) {
    const std::string what = "output " + std::to_string(o) + " (" + kOutputNames[o] + ")";
    if (aclError rc = expect_same_dtype(c, what.c_str(), c.out[o], "input 2 (weight)", weight)) return rc;
  }
  for (size_t i = 5; i < 7; ++i) {
    const std::string what = "input " + std::to_string(i) + " (" + kInputNames[i] + ")";
    if (aclError rc = expect_dtype_in(c, what.c_str(), c.in[i], {ACL_FLOAT})) return rc;
  }
  if (!norm_grad_dtype_row(dy.dtype, weight.dtype, c.in[3].dtype))
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                "%s: dy %s, weight %s, running_mean %s is not a dtype row of the op's definition "
                "(batch_norm_grad_v3_def.cpp)",
                op, dtype_name(dy.dtype), dtype_name(weight.dtype), dtype_name(c.in[3].dtype));
  if (c.attr_int("is_training", 1) == 0)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "%s: attribute is_training is false; the simulator implements the training form only", op);
  const size_t rank = x.dims.size();
  if (aclError rc = expect_nchw_or_ncdhw(op, {&dy, &x, &c.out[0]}, "dy, x and dx", "NHWC / NDHWC")) return rc;
  if (aclError rc = expect_same_shape(c, "input 1 (x)", x, "input 0 (dy)", dy)) return rc;
  if (aclError rc = expect_output_shape(c, 0, "output 0 (dx)", x.dims, "x's shape")) return rc;
  const int64_t channels = x.dims[1];
  if (aclError rc = expect_per_channel(c, 2, kInputNames, kOutputNames, channels)) return rc;
  int64_t inner = 1;
  for (size_t d = 2; d < rank; ++d) inner *= x.dims[d];
  const int64_t outer = x.dims[0];
  const float epsilon = c.attr_float("epsilon", 1e-5f);
  const bool rstd_input = std::strcmp(soc_family(), "ascend950") == 0;
  *run = [c, channels, inner, outer, epsilon, rstd_input] {
    const OpTensor &dy = c.in[0], &x = c.in[1], &weight = c.in[2], &mean = c.in[5], &stat = c.in[6];
    const float inv_m = fdiv(1.0f, static_cast<float>(outer * inner));
    for (int64_t ch = 0; ch < channels; ++ch) {
      const float mu = load_at<F32>(mean.data, ch), w = load_float(weight.dtype, weight.data, ch);
      const float v = load_at<F32>(stat.data, ch);
      const float sd = rstd_input ? 0.0f : std::sqrt(fadd(v, epsilon));
      auto scale_down = [&](float value) { return rstd_input ? fmul(value, v) : fdiv(value, sd); };
      float db = 0.0f, s = 0.0f;
      for (int64_t n = 0; n < outer; ++n)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t at = (n * channels + ch) * inner + i;
          const float d = load_float(dy.dtype, dy.data, at);
          db = fadd(db, d);
          s = fadd(s, fmul(fsub(load_float(x.dtype, x.data, at), mu), d));
        }
      const float dw = scale_down(s);
      const float k = fmul(scale_down(scale_down(s)), inv_m);
      const float a = fmul(db, inv_m);
      for (int64_t n = 0; n < outer; ++n)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t at = (n * channels + ch) * inner + i;
          const float xc = fsub(load_float(x.dtype, x.data, at), mu);
          const float g = fsub(fsub(load_float(dy.dtype, dy.data, at), a), fmul(xc, k));
          store_float(c.out[0].dtype, c.out[0].data, at, fmul(scale_down(g), w));
        }
      store_float(c.out[1].dtype, c.out[1].data, ch, dw);
      store_float(c.out[2].dtype, c.out[2].data, ch, db);
    }
  };
  return ACL_SUCCESS;
}

ACLSIM_OPS(batch_norm_grad, {"BatchNormGradV3", k_batch_norm_grad_v3})

}  // namespace aclsim
