// DropoutV2(x, seed; p) -> (y, mask, new_seed): each element is kept with probability 1 - p and
// scaled by 1 / (1 - p), else zeroed; mask is 1.0 where kept, 0.0 where dropped.
//
// Spec: GE random_ops.h REG_OP(DropoutV2) (mindspore-ai/graphengine 910/third_party/fwkacllib/inc/ops):
// x float16 / float32 ND; seed float32; outputs y (x's shape and type), mask ("Must be float32"),
// seed (new_seed, float32); REQUIRED_ATTR(p, Float), "probability of an element to be zeroed".
// The random stream is the simulator's own (a 64-bit mix of the seed's bits and the element index,
// not CANN's generator): which elements drop differs from hardware, the distribution and the
// y = x * mask / (1 - p) relation do not. new_seed = seed + 1.
//
// Sent by the CANN EP's nn/dropout.cc (Dropout 12, 13 in training mode with ratio > 0) with the mask
// output described as ACL_BOOL and p set with aclopSetAttrInt: both are rejected here as CANN's
// prototype does (mask float32, p a Float).
#include <cstring>

#include "dtypes.h"
#include "numerics.h"
#include "op_call.h"

namespace aclsim {
namespace {

// SplitMix64 finaliser: a well-mixed 64-bit value of (seed bits, element index).
uint64_t mix(uint64_t v) {
  v += 0x9E3779B97F4A7C15ull;
  v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9ull;
  v = (v ^ (v >> 27)) * 0x94D049BB133111EBull;
  return v ^ (v >> 31);
}

template <typename T>
void dropout(const OpCall& c, float p) {
  const float seed = load_at<F32>(c.in[1].data, 0);
  uint32_t seed_bits = 0;
  std::memcpy(&seed_bits, &seed, sizeof(seed_bits));
  const float scale = fdiv(1.0f, fsub(1.0f, p));
  const double keep = 1.0 - static_cast<double>(p);
  for (int64_t i = 0; i < c.in[0].numel; ++i) {
    const uint64_t r = mix((static_cast<uint64_t>(seed_bits) << 32) ^ static_cast<uint64_t>(i));
    const bool kept = static_cast<double>(r >> 11) * 0x1.0p-53 < keep;
    const float v = static_cast<float>(load_at<T>(c.in[0].data, i));
    store_at<T>(c.out[0].data, i, static_cast<typename T::Compute>(kept ? fmul(v, scale) : 0.0f));
    store_at<F32>(c.out[1].data, i, kept ? 1.0f : 0.0f);
  }
  store_at<F32>(c.out[2].data, 0, fadd(seed, 1.0f));
}

}  // namespace

aclError k_dropout_v2(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 2, 3)) return rc;
  const OpTensor &x = c.in[0], &seed = c.in[1], &y = c.out[0], &mask = c.out[1], &new_seed = c.out[2];
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", x, {ACL_FLOAT, ACL_FLOAT16})) return rc;
  if (aclError rc = expect_dtype_in(c, "input 1 (seed)", seed, {ACL_FLOAT})) return rc;
  if (aclError rc = expect_one_element(c, "input 1 (seed)", seed)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  if (mask.dtype != ACL_FLOAT)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "DropoutV2: output 1 (mask) has dtype %s, expected ACL_FLOAT (float32)",
                dtype_name(mask.dtype));
  if (aclError rc = expect_same_shape(c, "output 1 (mask)", mask, "input 0 (x)", x)) return rc;
  if (new_seed.dtype != ACL_FLOAT || new_seed.numel != 1)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "DropoutV2: output 2 (seed) is %s %s, expected one float32 element",
                dtype_name(new_seed.dtype), shape_str(new_seed.dims).c_str());
  auto it = c.attrs.find("p");
  if (it == c.attrs.end())
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "DropoutV2: required attribute p (Float) is missing");
  if (it->second.kind != aclopAttr::Value::kFloat)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "DropoutV2: attribute p must be a Float (aclopSetAttrFloat), got another type");
  const float p = it->second.f;
  if (!(p >= 0.0f && p < 1.0f))  // (p = 1 would scale by 1 / 0; ONNX's ratio is in [0, 1) too)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "DropoutV2: attribute p is %g, expected a probability in [0, 1)",
                static_cast<double>(p));
  if (x.dtype == ACL_FLOAT)
    *run = [c, p] { dropout<F32>(c, p); };
  else
    *run = [c, p] { dropout<F16>(c, p); };
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(dropout, {"DropoutV2", k_dropout_v2})

}  // namespace aclsim
