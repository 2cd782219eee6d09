// Elu(x; alpha, scale, input_scale) with the numerics of CANN's kernel
// (hicann/ops-nn@e5c3fa93 activation/elu/op_kernel/arch35/elu_dag.h:77-104 for float32, :119-145
// for float16/bfloat16), all in float32:
//   z = x * input_scale
//   em1 = |z| < 0.1 ? z*(1 + z*(1/2 + z*(1/6 + z*(1/24 [+ z/120])))) : expf(z) - 1
//        (Horner, one rounding per step; the 1/120 term for float32 only)
//   y = (x > 0 ? x : em1 * alpha) * scale, rounded once to y's dtype.
// NaN x takes the negative branch (the compare is false) and stays NaN.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "dtypes.h"
#include "internal.h"
#include "op_call.h"

namespace aclsim {
namespace {

template <typename T>
void elu(const OpCall& c, float alpha, float scale, float input_scale) {
  constexpr bool kFloat32 = std::is_same<T, F32>::value;
  const float c5 = 1.0f / 120.0f, c4 = 1.0f / 24.0f, c3 = 1.0f / 6.0f, c2 = 1.0f / 2.0f, c1 = 1.0f;
  for (int64_t i = 0; i < c.out[0].numel; ++i) {
    const float x = static_cast<float>(load_at<T>(c.in[0].data, i));
    const float z = fmul(x, input_scale);
    float t = kFloat32 ? fmul(fadd(fmul(z, c5), c4), z) : fmul(z, c4);
    t = fmul(fadd(t, c3), z);
    t = fmul(fadd(t, c2), z);
    t = fadd(t, c1);
    const float poly = fmul(t, z);
    const float em1 = std::fabs(z) < 0.1f ? poly : fadd(std::exp(z), -1.0f);
    const float neg = fmul(em1, alpha);
    const float y = fmul(x > 0.0f ? x : neg, scale);
    store_at<T>(c.out[0].data, i, static_cast<typename T::Compute>(y));
  }
}

// LeakyRelu in float32 as CANN's kernel (hicann/ops-nn activation/leaky_relu/op_kernel/arch35/leaky_relu_dag.h):
// neg = x * negative_slope, y = x > 0 ? x : neg, rounded once (NaN and -0.0 take neg).
template <typename T>
void leaky_relu(const OpCall& c, float slope) {
  for (int64_t i = 0; i < c.out[0].numel; ++i) {
    const float x = static_cast<float>(load_at<T>(c.in[0].data, i));
    store_at<T>(c.out[0].data, i, static_cast<typename T::Compute>(x > 0.0f ? x : fmul(x, slope)));
  }
}

}  // namespace

// LeakyRelu(x; negative_slope = 0.0) -> y (activation/leaky_relu/op_host/leaky_relu_def.cpp: x, y bfloat16 /
// float16 / float32 ND; README: Atlas training series float32 / float16 only).
aclError k_leaky_relu(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", c.in[0], {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  if (c.in[0].dtype == ACL_BF16 && std::strcmp(soc_family(), "ascend910") == 0)
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                "LeakyRelu: input 0 (x) is ACL_BF16, which the Atlas training series (%s) does not take "
                "(activation/leaky_relu/README.md: float32, float16)",
                soc_family());
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  const float slope = c.attr_float("negative_slope", 0.0f);
  visit_listed<F32, F16, BF16>(c.in[0].dtype,
                               [&](auto t) { *run = [c, slope] { leaky_relu<decltype(t)>(c, slope); }; });
  return ACL_SUCCESS;
}

aclError k_elu(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", c.in[0], {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  const float alpha = c.attr_float("alpha", 1.0f), scale = c.attr_float("scale", 1.0f),
              input_scale = c.attr_float("input_scale", 1.0f);
  visit_listed<F32, F16, BF16>(c.in[0].dtype, [&](auto t) {
    *run = [c, alpha, scale, input_scale] { elu<decltype(t)>(c, alpha, scale, input_scale); };
  });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(activation, {"Elu", k_elu}, {"LeakyRelu", k_leaky_relu})

}  // namespace aclsim
