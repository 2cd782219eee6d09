// GeluV2(x; approximate) -> y, CANN's GELU with a choice of formula (hicann/ops-nn@e5c3fa93
// activation/gelu_v2: op_host/gelu_v2_def.cpp, attr approximate a string, default "none"; x and y
// float32/float16/bfloat16, ND; docs/aclnnGeluV2.md: shapes of rank 0-8, y of x's dtype and shape,
// "none" or "tanh", no bfloat16 on the Atlas training / inference series and 200I/500 A2; the op is
// absent from 200I/500 A2: ort_ops/cann_soc_table.json). Numerics of op_kernel/arch35/gelu_v2_dag.h,
// all in float32 (float16/bfloat16 cast up exactly, the result rounded once to nearest even):
//   "none" (GeluV2Erf*Dag):  y = (erf(x * 0.707106781f) + 1) * (x * 0.5)
//   "tanh" (GeluV2Tanh):     c = x*x*x + x * (1/0.044715);  y = x / (1 + exp(c * (-1.595769121 * 0.044715)))
// each step one float32 operation (x*x*x as (x*x)*x; the Axpy as a product, then a sum). The device's
// Erf and Exp are its own approximations: here std::erf / std::exp of float32 (a few ulp apart).
// The tanh form is tanh's identity 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)): large negative x gives -0
// (exp overflows to inf), large positive x gives x. NaN stays NaN.
#include <cmath>
#include <string>

#include "dtypes.h"
#include "op_call.h"

namespace aclsim {
namespace {

constexpr float kOneOverSqrtTwo = 0.707106781f;
constexpr float kTanhApproxFactor = static_cast<float>(1 / 0.044715);
constexpr float kNegSqrtEightOverPi = static_cast<float>(-1.595769121 * 0.044715);

float gelu_erf(float x) { return fmul(fadd(std::erf(fmul(x, kOneOverSqrtTwo)), 1.0f), fmul(x, 0.5f)); }

float gelu_tanh(float x) {
  const float cube = fmul(fmul(x, x), x);
  const float inner = fadd(cube, fmul(x, kTanhApproxFactor));
  return fdiv(x, fadd(std::exp(fmul(inner, kNegSqrtEightOverPi)), 1.0f));
}

template <typename T>
void gelu_v2(const OpCall& c, bool tanh_form) {
  for (int64_t i = 0; i < c.out[0].numel; ++i) {
    const float x = static_cast<float>(load_at<T>(c.in[0].data, i));
    store_at<T>(c.out[0].data, i, static_cast<typename T::Compute>(tanh_form ? gelu_tanh(x) : gelu_erf(x)));
  }
}

}  // namespace

aclError k_gelu_v2(const OpCall& c, Run* run) {
  if (aclError rc = expect_x_to_y(c, 1, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  if (c.in[0].dims.size() > 8)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "GeluV2: input 0 (x) has rank %zu, expected 0-8 (aclnnGeluV2.md)",
                c.in[0].dims.size());
  const std::string family = soc_family();
  if (c.in[0].dtype == ACL_BF16 && (family == "ascend910" || family == "ascend310p" || family == "ascend310b"))
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                "GeluV2: input 0 (x) is bfloat16, not supported on %s (float32, float16 only: aclnnGeluV2.md)",
                family.c_str());
  const std::string approximate = c.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "GeluV2: attribute approximate is \"%s\", expected \"none\" or \"tanh\"",
                approximate.c_str());
  const bool tanh_form = approximate == "tanh";
  visit_listed<F32, F16, BF16>(c.in[0].dtype,
                               [&](auto t) { *run = [c, tanh_form] { gelu_v2<decltype(t)>(c, tanh_form); }; });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(gelu_v2, {"GeluV2", k_gelu_v2})

}  // namespace aclsim
