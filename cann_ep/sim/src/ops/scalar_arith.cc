// Arithmetic with a scalar attribute: Muls (x * value), Adds (x + value), Axpy (x1 + alpha * x2,
// broadcasting). Computed in float32 like CANN's kernels (hicann/ops-math@c4193324
// math/muls/op_kernel/muls_apt.cpp, math/adds/op_kernel/adds_apt.cpp, math/axpy/op_kernel/axpy_apt.cpp):
// float16/bfloat16 load exactly and round once; integers convert to float32 and back with the
// kernels' rounding modes (Muls int32: half away from zero in, toward zero out; Muls int64: half
// away both ways; Adds int32/int64 and Axpy int32: to nearest even in, toward zero out; int16:
// exact in, toward zero out), saturating, NaN -> 0.
#include <array>

#include "broadcast.h"
#include "dtypes.h"
#include "op_call.h"

namespace aclsim {
namespace {

enum class Rounding { kNearestEven, kHalfAway, kTowardZero };

template <typename S>
float int_to_f32(S v, Rounding mode) {
  if (mode == Rounding::kHalfAway) return i64_to_f32_round_away(static_cast<int64_t>(v));
  return static_cast<float>(v);  // nearest even (exact for int16)
}

template <typename S>
S f32_to_int(float v, Rounding mode) {
  return mode == Rounding::kHalfAway ? saturate_round<S>(v) : saturate_trunc<S>(v);
}

struct IntModes {
  Rounding in, out;
};

// The kernels' cast modes for integer x (see the file comment).
IntModes int_modes(const std::string& op, aclDataType t) {
  if (t == ACL_INT16) return {Rounding::kNearestEven, Rounding::kTowardZero};
  if (op == "Muls" && t == ACL_INT32) return {Rounding::kHalfAway, Rounding::kTowardZero};
  if (op == "Muls" && t == ACL_INT64) return {Rounding::kHalfAway, Rounding::kHalfAway};
  return {Rounding::kNearestEven, Rounding::kTowardZero};
}

// Loads element i as float32 (integers with `modes.in`).
template <typename T>
float load_f32(const void* p, int64_t i, IntModes modes) {
  auto v = load_at<T>(p, i);
  if constexpr (T::kFloat) {
    return static_cast<float>(v);
  } else {
    return int_to_f32(v, modes.in);
  }
}

template <typename T>
void store_f32(void* p, int64_t i, float v, IntModes modes) {
  if constexpr (T::kFloat) {
    store_at<T>(p, i, static_cast<typename T::Compute>(v));
  } else {
    store_at<T>(p, i, f32_to_int<typename T::Storage>(v, modes.out));
  }
}

aclError required_float(const OpCall& c, const char* name, float* v) {
  if (!c.has_attr(name))
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: required attribute %s (float) is missing", c.type.c_str(), name);
  *v = c.attr_float(name, 0.0f);
  return ACL_SUCCESS;
}

}  // namespace

// Muls / Adds (x, attr value) -> y.
aclError k_muls_adds(const OpCall& c, Run* run) {
  if (aclError rc = expect_x_to_y(c, 1, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT16, ACL_INT32, ACL_INT64})) return rc;
  const OpTensor &x = c.in[0], &y = c.out[0];
  if (aclError rc = expect_same_shape(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  float value;
  if (aclError rc = required_float(c, "value", &value)) return rc;
  const bool mul = c.type == "Muls";
  const IntModes modes = int_modes(c.type, x.dtype);
  visit_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!T::kBool)
      *run = [c, value, mul, modes] {
        for (int64_t i = 0; i < c.out[0].numel; ++i) {
          const float v = load_f32<T>(c.in[0].data, i, modes);
          store_f32<T>(c.out[0].data, i, mul ? fmul(v, value) : fadd(v, value), modes);
        }
      };
  });
  return ACL_SUCCESS;
}

// Axpy (x1, x2, attr alpha) -> y = x1 + (x2 * alpha): the product rounded to float32, then the sum.
aclError k_axpy(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  const OpTensor &a = c.in[0], &b = c.in[1], &y = c.out[0];
  if (aclError rc = expect_dtype_in(c, "input 0 (x1)", a, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT32})) return rc;
  if (aclError rc = expect_same_dtype(c, "input 1 (x2)", b, "input 0 (x1)", a)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x1)", a)) return rc;
  std::vector<int64_t> shape;
  if (!broadcast_shape(a.dims, b.dims, &shape))
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "Axpy: input shapes %s and %s cannot be broadcast",
                shape_str(a.dims).c_str(), shape_str(b.dims).c_str());
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", shape, "broadcast of x1 and x2")) return rc;
  float alpha;
  if (aclError rc = required_float(c, "alpha", &alpha)) return rc;
  const IntModes modes = int_modes(c.type, a.dtype);
  visit_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!T::kBool)
      *run = [c, alpha, modes, shape] {
        std::array<std::vector<int64_t>, 2> s{broadcast_strides(c.in[0].dims, shape),
                                              broadcast_strides(c.in[1].dims, shape)};
        for_each_broadcast(shape, s, [&](int64_t i, const std::array<int64_t, 2>& o) {
          const float x1 = load_f32<T>(c.in[0].data, o[0], modes);
          const float x2 = load_f32<T>(c.in[1].data, o[1], modes);
          store_f32<T>(c.out[0].data, i, fadd(x1, fmul(x2, alpha)), modes);
        });
      };
  });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(scalar_arith, {"Muls", k_muls_adds}, {"Adds", k_muls_adds}, {"Axpy", k_axpy})

}  // namespace aclsim
