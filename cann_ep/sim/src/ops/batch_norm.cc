// BatchNorm, inference form (is_training = false): y = ((x - mean) * scale) * rstd + offset per channel,
// rstd = 1 / sqrt(variance + epsilon); batch_mean = reserve_space_1 = mean, batch_variance =
// reserve_space_2 = variance.
//
// Spec: GE nn_batch_norm_ops.h REG_OP(BatchNorm) (mindspore-ai/graphengine 910/third_party/fwkacllib/
// inc/ops): x float16/float32 (bfloat16 too in hicann/ops-nn norm/batch_norm/op_host/batch_norm_def.cpp),
// scale/offset/mean/variance float32, "Must be 1D if input x is with format NHWC or NCHW"; outputs y,
// batch_mean, batch_variance, reserve_space_1, reserve_space_2 and reserve_space_3 ("An optional Tensor
// ... only has one useless element"); attrs epsilon (1e-4), data_format ("NHWC"), is_training (true);
// "If the operation is used for inference ... reserve_space_1 has the same value as mean and
// reserve_space_2 has the same value as variance". ops-nn norm/batch_norm/README.md: x at least 2-D,
// formats NCHW/NHWC/NCDHW/NDHWC/ND (ND: C is the second dim). The inference arithmetic order is the
// arch35 kernel's (ops-nn norm/batch_norm/op_kernel/arch35/batch_norm_infer.h VFNormalize: Sub mean, Mul
// gamma, Mul rstd, Add beta, in float32); its rstd comes from a Newton-Raphson step
// (ComputeRstdNewtonRaphsonReg), which the simulator replaces by the correctly rounded 1 / sqrt.
//
// Sent by the CANN EP's nn/batch_norm.cc (ONNX BatchNormalization, float): x and y with ACL_FORMAT_NCHW
// for every rank, data_format "NCHW", five outputs. Simulated: data_format NCHW with a 4-D NCHW (or
// rank >= 2 ND) x, inference only; training mode and the NHWC / 5-D layouts fail as not simulated.
#include <cmath>

#include "dtypes.h"
#include "numerics.h"
#include "op_call.h"

namespace aclsim {
namespace {

constexpr float kDefaultEpsilon = 1e-4f;  // REG_OP(BatchNorm) .ATTR(epsilon, Float, 0.0001)
constexpr size_t kStatInputs = 4;         // scale, offset, mean, variance
const char* const kInputNames[] = {"x", "scale", "offset", "mean", "variance"};
const char* const kOutputNames[] = {
    "y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2", "reserve_space_3"};

template <typename T>
void batch_norm_infer(const OpCall& c, int64_t channels, int64_t inner, float epsilon) {
  const void* x = c.in[0].data;
  void* y = c.out[0].data;
  const int64_t outer = c.in[0].dims[0];  // N (x is [N, C, ...])
  for (int64_t ch = 0; ch < channels; ++ch) {
    const float scale = load_at<F32>(c.in[1].data, ch), offset = load_at<F32>(c.in[2].data, ch);
    const float mean = load_at<F32>(c.in[3].data, ch), var = load_at<F32>(c.in[4].data, ch);
    const float rstd = fdiv(1.0f, std::sqrt(fadd(var, epsilon)));
    for (int64_t n = 0; n < outer; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = (n * channels + ch) * inner + i;
        const float v = static_cast<float>(load_at<T>(x, at));
        store_at<T>(y, at, static_cast<typename T::Compute>(fadd(fmul(fmul(fsub(v, mean), scale), rstd), offset)));
      }
  }
  // batch_mean, reserve_space_1 <- mean; batch_variance, reserve_space_2 <- variance.
  for (size_t o = 1; o < 5; ++o) {
    const size_t src = (o == 1 || o == 3) ? 3 : 4;
    if (c.in[src].bytes > 0 && c.out[o].data != c.in[src].data)
      std::memmove(c.out[o].data, c.in[src].data, c.in[src].bytes);
  }
}

}  // namespace

// BatchNorm(x, scale, offset, mean, variance; epsilon, data_format, is_training) -> (y, batch_mean,
// batch_variance, reserve_space_1, reserve_space_2[, reserve_space_3]).
aclError k_batch_norm(const OpCall& c, Run* run) {
  if (c.in.size() != 5 || (c.out.size() != 5 && c.out.size() != 6))
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "BatchNorm: got %zu inputs and %zu outputs, expected 5 inputs (x, scale, offset, mean, variance) "
                "and 5 or 6 outputs (y, batch_mean, batch_variance, reserve_space_1, reserve_space_2[, "
                "reserve_space_3])",
                c.in.size(), c.out.size());
  const OpTensor &x = c.in[0], &y = c.out[0];
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", x, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  const std::string data_format = c.attr_string("data_format", "NHWC");
  if (data_format != "NCHW")
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "BatchNorm: attribute data_format is \"%s\"%s; the simulator implements NCHW only", data_format.c_str(),
                c.has_attr("data_format") ? "" : " (the default)");
  if (c.attr_int("is_training", 1) != 0)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "BatchNorm: attribute is_training is true%s; the simulator implements the "
                "inference form (is_training = false) only",
                c.has_attr("is_training") ? "" : " (the default)");
  const size_t rank = x.dims.size();
  if (x.format == ACL_FORMAT_NCHW ? rank != 4 : (x.format != ACL_FORMAT_ND || rank < 2))
    return fail(x.format == ACL_FORMAT_NCHW || x.format == ACL_FORMAT_ND ? ACL_ERROR_OP_INPUT_NOT_MATCH
                                                                         : ACL_ERROR_FORMAT_NOT_MATCH,
                "BatchNorm: input 0 (x) has shape %s with format %d; expected a 4-D tensor with format NCHW (%d) or "
                "at least 2-D with format ND (%d)",
                shape_str(x.dims).c_str(), static_cast<int>(x.format), static_cast<int>(ACL_FORMAT_NCHW),
                static_cast<int>(ACL_FORMAT_ND));
  const int64_t channels = x.dims[1];
  int64_t inner = 1;
  for (size_t i = 2; i < rank; ++i) inner *= x.dims[i];
  const std::vector<int64_t> per_channel{channels};
  for (size_t i = 1; i <= kStatInputs; ++i) {
    const OpTensor& t = c.in[i];
    const std::string what = "input " + std::to_string(i) + " (" + kInputNames[i] + ")";
    if (t.absent)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "BatchNorm: %s is omitted; the inference form needs it", what.c_str());
    if (aclError rc = expect_dtype_in(c, what.c_str(), t, {ACL_FLOAT})) return rc;
    if (t.dims != per_channel)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "BatchNorm: %s has shape %s, expected [%lld] (x's channels)",
                  what.c_str(), shape_str(t.dims).c_str(), static_cast<long long>(channels));
  }
  for (size_t o = 1; o < c.out.size(); ++o) {
    const OpTensor& t = c.out[o];
    const std::string what = "output " + std::to_string(o) + " (" + kOutputNames[o] + ")";
    if (t.dtype != ACL_FLOAT)
      return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "BatchNorm: %s has dtype %s, expected float32", what.c_str(),
                  dtype_name(t.dtype));
    const bool last = o == 5;  // reserve_space_3: one element
    if (last ? t.numel != 1 : t.dims != per_channel)
      return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "BatchNorm: %s has shape %s, expected %s", what.c_str(),
                  shape_str(t.dims).c_str(), last ? "[1]" : shape_str(per_channel).c_str());
  }
  const float epsilon = c.attr_float("epsilon", kDefaultEpsilon);
  visit_listed<F32, F16, BF16>(x.dtype, [&](auto t) {
    *run = [c, channels, inner, epsilon] { batch_norm_infer<decltype(t)>(c, channels, inner, epsilon); };
  });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(batch_norm, {"BatchNorm", k_batch_norm})

}  // namespace aclsim
