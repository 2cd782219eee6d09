// Binary elementwise kernels with NumPy broadcasting: arithmetic, comparisons, logical ops,
// Select/SelectV2. Half types compute in float32 and round once; integers wrap like NumPy.
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "broadcast.h"
#include "dtypes.h"
#include "min_max.h"
#include "op_call.h"

namespace aclsim {
namespace {

enum class Arith { kAdd, kSub, kMul, kDiv, kMax, kMin, kPow };
enum class Cmp { kLt, kLe, kGt, kGe, kEq, kNe };

template <typename C>
C arith_raw(Arith op, C a, C b) {
  switch (op) {
    case Arith::kAdd: return a + b;
    case Arith::kSub: return a - b;
    case Arith::kMul: return a * b;
    case Arith::kDiv: return a / b;
    case Arith::kMax: return max_nan(a, b);  // NaN propagates, like np.maximum (min_max.h)
    case Arith::kMin: return min_nan(a, b);
    case Arith::kPow: return std::pow(a, b);  // C's pow: pow(x, 0) = pow(1, y) = 1, NaN or not
  }
  return a;
}

template <typename C>
C arith(Arith op, C a, C b) {
  if constexpr (std::is_floating_point<C>::value) {
    const C y = arith_raw(op, a, b);
    if (y != y && op != Arith::kMax && op != Arith::kMin) return nan_result(a, b);  // see numerics.h
    return y;
  } else {
    using U = std::make_unsigned_t<C>;
    switch (op) {
      case Arith::kAdd: return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      case Arith::kSub: return static_cast<C>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
      case Arith::kMul:
        return static_cast<C>(static_cast<U>(static_cast<uint64_t>(static_cast<U>(a)) * static_cast<U>(b)));
      case Arith::kDiv:
        if (b == 0) return 0;  // defined here; undefined on hardware
        if (std::is_signed<C>::value && b == static_cast<C>(-1))
          return static_cast<C>(static_cast<U>(0) - static_cast<U>(a));
        return static_cast<C>(a / b);
      case Arith::kMax: return max_nan(a, b);
      case Arith::kMin: return min_nan(a, b);
      case Arith::kPow: return a;  // not reached: pow_kernel takes floats only
    }
    return a;
  }
}

template <typename C>
bool compare(Cmp op, C a, C b) {
  switch (op) {
    case Cmp::kLt: return a < b;
    case Cmp::kLe: return a <= b;
    case Cmp::kGt: return a > b;
    case Cmp::kGe: return a >= b;
    case Cmp::kEq: return a == b;
    case Cmp::kNe: return a != b;
  }
  return false;
}

// Checks two same-dtype inputs broadcasting to the output shape.
aclError check_binary(const OpCall& c, aclDataType out_dtype) {
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  if (aclError rc = expect_same_dtype(c, "input 1 (x2)", c.in[1], "input 0 (x1)", c.in[0])) return rc;
  if (c.out[0].dtype != out_dtype)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "%s: output 0 has dtype %s, expected %s", c.type.c_str(),
                dtype_name(c.out[0].dtype), dtype_name(out_dtype));
  std::vector<int64_t> shape;
  if (!broadcast_shape(c.in[0].dims, c.in[1].dims, &shape))
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input shapes %s and %s cannot be broadcast", c.type.c_str(),
                shape_str(c.in[0].dims).c_str(), shape_str(c.in[1].dims).c_str());
  if (shape != c.out[0].dims)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "%s: output 0 has shape %s, expected %s (broadcast of %s and %s)",
                c.type.c_str(), shape_str(c.out[0].dims).c_str(), shape_str(shape).c_str(),
                shape_str(c.in[0].dims).c_str(), shape_str(c.in[1].dims).c_str());
  return ACL_SUCCESS;
}

aclError unsupported(const OpCall& c, const char* what, aclDataType t) {
  return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "%s: %s has unsupported dtype %s", c.type.c_str(), what, dtype_name(t));
}

// Whether CANN op `type`'s prototype lists dtype `t` (of the dtypes simulated: bool, complex and
// string entries are not), hicann/ops-math@c4193324 math/<op>/op_graph/<op>_proto.h: Add (no uint16),
// Sub, Mul, Div, RealDiv (also uint16); Maximum/Minimum are not restricted here.
bool prototype_lists(const std::string& type, aclDataType t) {
  if (t == ACL_UINT16) return type != "Add";
  if (t == ACL_UINT32 || t == ACL_UINT64) return type == "Maximum" || type == "Minimum";
  return dtype_listed(
      t, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE, ACL_INT8, ACL_INT16, ACL_INT32, ACL_INT64, ACL_UINT8});
}

aclError arith_kernel(Arith op, const OpCall& c, Run* run) {
  if (aclError rc = check_binary(c, c.in.empty() ? ACL_DT_UNDEFINED : c.in[0].dtype)) return rc;
  if (!prototype_lists(c.type, c.in[0].dtype)) return unsupported(c, "input 0 (x1)", c.in[0].dtype);
  bool ok = visit_dtype(c.in[0].dtype, [&](auto t) {
    using T = decltype(t);
    *run = [c, op] {
      const auto* a = ptr<T>(c.in[0].data);
      const auto* b = ptr<T>(c.in[1].data);
      auto* y = ptr<T>(c.out[0].data);
      std::array<std::vector<int64_t>, 2> s{broadcast_strides(c.in[0].dims, c.out[0].dims),
                                            broadcast_strides(c.in[1].dims, c.out[0].dims)};
      for_each_broadcast(c.out[0].dims, s, [&](int64_t i, const std::array<int64_t, 2>& o) {
        y[i] = T::store(arith<typename T::Compute>(op, T::load(a[o[0]]), T::load(b[o[1]])));
      });
    };
  });
  return ok ? ACL_SUCCESS : unsupported(c, "input 0 (x1)", c.in[0].dtype);
}

aclError compare_kernel(Cmp op, const OpCall& c, Run* run) {
  if (aclError rc = check_binary(c, ACL_BOOL)) return rc;
  if (c.in[0].dtype == ACL_BOOL && op != Cmp::kEq && op != Cmp::kNe)  // RealNumberType: no bool
    return unsupported(c, "input 0 (x1)", ACL_BOOL);
  bool ok = visit_dtype(c.in[0].dtype, [&](auto t) {
    using T = decltype(t);
    *run = [c, op] {
      const auto* a = ptr<T>(c.in[0].data);
      const auto* b = ptr<T>(c.in[1].data);
      auto* y = static_cast<uint8_t*>(c.out[0].data);
      std::array<std::vector<int64_t>, 2> s{broadcast_strides(c.in[0].dims, c.out[0].dims),
                                            broadcast_strides(c.in[1].dims, c.out[0].dims)};
      for_each_broadcast(c.out[0].dims, s, [&](int64_t i, const std::array<int64_t, 2>& o) {
        y[i] = compare<typename T::Compute>(op, T::load(a[o[0]]), T::load(b[o[1]])) ? 1 : 0;
      });
    };
  });
  return ok ? ACL_SUCCESS : unsupported(c, "input 0 (x1)", c.in[0].dtype);
}

enum class Logic { kAnd, kOr };

// LogicalAnd / LogicalOr on bool inputs (any non-zero byte is true), broadcasting.
aclError logical_kernel(Logic op, const OpCall& c, Run* run) {
  if (aclError rc = check_binary(c, ACL_BOOL)) return rc;
  if (c.in[0].dtype != ACL_BOOL) return unsupported(c, "input 0 (x1)", c.in[0].dtype);
  *run = [c, op] {
    const auto* a = static_cast<const uint8_t*>(c.in[0].data);
    const auto* b = static_cast<const uint8_t*>(c.in[1].data);
    auto* y = static_cast<uint8_t*>(c.out[0].data);
    std::array<std::vector<int64_t>, 2> s{broadcast_strides(c.in[0].dims, c.out[0].dims),
                                          broadcast_strides(c.in[1].dims, c.out[0].dims)};
    for_each_broadcast(c.out[0].dims, s, [&](int64_t i, const std::array<int64_t, 2>& o) {
      const bool x1 = a[o[0]] != 0, x2 = b[o[1]] != 0;
      y[i] = (op == Logic::kAnd ? (x1 && x2) : (x1 || x2)) ? 1 : 0;
    });
  };
  return ACL_SUCCESS;
}

// The Promote of CANN Pow's prototype (hicann/ops-math math/pow/op_graph/pow_proto.h: x1 "T1", x2
// "T2", y "T3" = Promote({"T1", "T2"})) for the pairs simulated: a float type wins over an integer
// one, the wider integer over the narrower.
aclDataType pow_promote(aclDataType a, aclDataType b) {
  const bool a_int = a == ACL_INT32 || a == ACL_INT64, b_int = b == ACL_INT32 || b == ACL_INT64;
  if (a == b) return a;
  if (a_int && b_int) return ACL_INT64;
  if (a_int) return b;
  if (b_int) return a;
  return ACL_DT_UNDEFINED;
}

// Integer x1 ** x2 as CANN's AICPU Pow kernel computes it (pow_aicpu.cpp PowImpl / PowiImpl):
// repeated squaring in the output type (wrapping on overflow: in unsigned arithmetic here, no
// undefined behaviour); a negative exponent gives 1 for x1 = 1, +-1 for x1 = -1 (by the exponent's
// parity) and 0 otherwise ("1/a rounded down").
template <typename Out, typename E>
Out int_pow(Out a, E b) {
  using U = std::make_unsigned_t<Out>;
  if (b < 0) {
    if (a == 1) return 1;
    if (a == -1) return (b % 2) != 0 ? -1 : 1;
    return 0;
  }
  U out = 1, base = static_cast<U>(a);
  for (auto e = static_cast<std::make_unsigned_t<E>>(b); e != 0; e >>= 1) {
    if ((e & 1) != 0) out = static_cast<U>(out * base);
    base = static_cast<U>(base * base);
  }
  return static_cast<Out>(out);
}

template <typename T>
double pow_load(const void* data, int64_t i) {
  if constexpr (std::is_same<T, uint16_t>::value) return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
  return static_cast<double>(static_cast<const T*>(data)[i]);
}

// Pow with an integer input (hicann/ops-math math/pow/op_kernel_aicpu: pow.json lists
// float16/float32/double/int8/int16/int32/int64/uint8/complex for x1, x2 and y; pow_aicpu.cpp's
// table names the (x1, x2, y) triples). Simulated: int32/int64 ** int32/int64 (y their Promote,
// int_pow above), and float16/float32/double ** int32/int64 (y x1's type: C++ std::pow of the
// operands, in double, rounded to y once; a float16 goes through float first, as the kernel's
// Eigen::half does). bfloat16 is not in the AICPU kernel's table: refused.
aclError mixed_pow_kernel(const OpCall& c, Run* run) {
  const aclDataType a = c.in[0].dtype, b = c.in[1].dtype;
  const bool a_int = a == ACL_INT32 || a == ACL_INT64, b_int = b == ACL_INT32 || b == ACL_INT64;
  if (!b_int || !(a_int || dtype_listed(a, {ACL_FLOAT, ACL_FLOAT16, ACL_DOUBLE})))
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                "Pow: inputs of dtypes %s and %s: the pairs simulated are float16/float32/double or int32/int64 "
                "to an int32/int64 power (the AICPU kernel's; bfloat16 is not in its table)",
                dtype_name(a), dtype_name(b));
  const aclDataType want = pow_promote(a, b);
  if (c.out[0].dtype != want)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "Pow: output 0 has dtype %s, expected %s (Promote of %s and %s)",
                dtype_name(c.out[0].dtype), dtype_name(want), dtype_name(a), dtype_name(b));
  *run = [c, a, b, want] {
    std::array<std::vector<int64_t>, 2> s{broadcast_strides(c.in[0].dims, c.out[0].dims),
                                          broadcast_strides(c.in[1].dims, c.out[0].dims)};
    const void* x = c.in[0].data;
    const void* e = c.in[1].data;
    void* y = c.out[0].data;
    for_each_broadcast(c.out[0].dims, s, [&](int64_t i, const std::array<int64_t, 2>& o) {
      const int64_t n = b == ACL_INT32 ? static_cast<const int32_t*>(e)[o[1]] : static_cast<const int64_t*>(e)[o[1]];
      if (want == ACL_INT64) {
        const int64_t base =
            a == ACL_INT32 ? static_cast<const int32_t*>(x)[o[0]] : static_cast<const int64_t*>(x)[o[0]];
        static_cast<int64_t*>(y)[i] = int_pow<int64_t>(base, n);
      } else if (want == ACL_INT32) {  // int32 ** int32
        static_cast<int32_t*>(y)[i] = int_pow<int32_t>(static_cast<const int32_t*>(x)[o[0]], static_cast<int32_t>(n));
      } else if (want == ACL_DOUBLE) {
        static_cast<double*>(y)[i] = std::pow(pow_load<double>(x, o[0]), static_cast<double>(n));
      } else if (want == ACL_FLOAT) {
        static_cast<float*>(y)[i] = static_cast<float>(std::pow(pow_load<float>(x, o[0]), static_cast<double>(n)));
      } else {  // float16
        const auto r = static_cast<float>(std::pow(pow_load<uint16_t>(x, o[0]), static_cast<double>(n)));
        static_cast<uint16_t*>(y)[i] = f32_to_f16(r);
      }
    });
  };
  return ACL_SUCCESS;
}

// Pow(x1, x2) -> x1 ** x2 (hicann/ops-math@1969cd7f math/pow/README.md: out_i = input_i ^ exponent_i,
// NumPy broadcasting). Two inputs of one float type (the AICore kernel): C's pow in float32
// (float16/bfloat16 load exactly, round once) or float64, with C's special values (pow(x, 0) = 1
// and pow(1, y) = 1 even for NaN, a negative base with a non-integer exponent gives NaN). An integer
// input: mixed_pow_kernel (the AICPU kernel). Complex types are not simulated.
aclError pow_kernel(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  const bool floats = dtype_listed(c.in[0].dtype, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE});
  if (!(floats && c.in[1].dtype == c.in[0].dtype)) {
    std::vector<int64_t> shape;
    if (!broadcast_shape(c.in[0].dims, c.in[1].dims, &shape) || shape != c.out[0].dims)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "Pow: input shapes %s and %s do not broadcast to the output's %s",
                  shape_str(c.in[0].dims).c_str(), shape_str(c.in[1].dims).c_str(), shape_str(c.out[0].dims).c_str());
    return mixed_pow_kernel(c, run);
  }
  return arith_kernel(Arith::kPow, c, run);
}

}  // namespace

aclError k_pow(const OpCall& c, Run* r) { return pow_kernel(c, r); }
aclError k_add(const OpCall& c, Run* r) { return arith_kernel(Arith::kAdd, c, r); }
aclError k_sub(const OpCall& c, Run* r) { return arith_kernel(Arith::kSub, c, r); }
aclError k_mul(const OpCall& c, Run* r) { return arith_kernel(Arith::kMul, c, r); }
aclError k_div(const OpCall& c, Run* r) { return arith_kernel(Arith::kDiv, c, r); }
aclError k_maximum(const OpCall& c, Run* r) { return arith_kernel(Arith::kMax, c, r); }
aclError k_minimum(const OpCall& c, Run* r) { return arith_kernel(Arith::kMin, c, r); }
aclError k_less(const OpCall& c, Run* r) { return compare_kernel(Cmp::kLt, c, r); }
aclError k_less_equal(const OpCall& c, Run* r) { return compare_kernel(Cmp::kLe, c, r); }
aclError k_greater(const OpCall& c, Run* r) { return compare_kernel(Cmp::kGt, c, r); }
aclError k_greater_equal(const OpCall& c, Run* r) { return compare_kernel(Cmp::kGe, c, r); }
aclError k_equal(const OpCall& c, Run* r) { return compare_kernel(Cmp::kEq, c, r); }
aclError k_not_equal(const OpCall& c, Run* r) { return compare_kernel(Cmp::kNe, c, r); }
aclError k_logical_and(const OpCall& c, Run* r) { return logical_kernel(Logic::kAnd, c, r); }
aclError k_logical_or(const OpCall& c, Run* r) { return logical_kernel(Logic::kOr, c, r); }

// LogicalNot(x: bool) -> !x.
aclError k_logical_not(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  if (c.in[0].dtype != ACL_BOOL) return unsupported(c, "input 0 (x)", c.in[0].dtype);
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  *run = [c] {
    const auto* x = static_cast<const uint8_t*>(c.in[0].data);
    auto* y = static_cast<uint8_t*>(c.out[0].data);
    for (int64_t i = 0; i < c.out[0].numel; ++i) y[i] = x[i] != 0 ? 0 : 1;
  };
  return ACL_SUCCESS;
}

// IsNan(x) -> y bool: x != x per element (hicann/ops-math math/is_nan/README.md formula; x bfloat16, float16,
// float32 and y bool: op_host/is_nan_def.cpp). Half types compare their float32 value: the same answer.
aclError k_is_nan(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", c.in[0], {ACL_BF16, ACL_FLOAT16, ACL_FLOAT})) return rc;
  if (aclError rc = expect_dtype_in(c, "output 0 (y)", c.out[0], {ACL_BOOL})) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  visit_dtype(c.in[0].dtype, [&](auto t) {
    using T = decltype(t);
    *run = [c] {
      auto* y = static_cast<uint8_t*>(c.out[0].data);
      for (int64_t i = 0; i < c.out[0].numel; ++i) {
        const auto v = load_at<T>(c.in[0].data, i);
        y[i] = v != v ? 1 : 0;
      }
    };
  });
  return ACL_SUCCESS;
}

// Select(condition: bool, x1, x2) and SelectV2(condition, then, else) -> condition ? x1 : x2,
// all three broadcast like NumPy (any non-zero condition byte is true); any dtype (copied by size).
aclError k_select(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 3, 1)) return rc;
  const bool v2 = c.type == "SelectV2";
  const char* in1 = v2 ? "input 1 (then)" : "input 1 (x1)";
  const char* in2 = v2 ? "input 2 (else)" : "input 2 (x2)";
  const char* out = v2 ? "output 0 (result)" : "output 0 (y)";
  if (c.in[0].dtype != ACL_BOOL)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 0 (condition) has dtype %s, expected ACL_BOOL", c.type.c_str(),
                dtype_name(c.in[0].dtype));
  if (aclError rc = expect_same_dtype(c, in2, c.in[2], in1, c.in[1])) return rc;
  if (aclError rc = expect_same_dtype(c, out, c.out[0], in1, c.in[1])) return rc;
  std::vector<int64_t> s01, shape;
  if (!broadcast_shape(c.in[0].dims, c.in[1].dims, &s01) || !broadcast_shape(s01, c.in[2].dims, &shape))
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: shapes %s, %s, %s cannot be broadcast", c.type.c_str(),
                shape_str(c.in[0].dims).c_str(), shape_str(c.in[1].dims).c_str(), shape_str(c.in[2].dims).c_str());
  if (shape != c.out[0].dims)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "%s: %s has shape %s, expected %s (broadcast of the inputs)",
                c.type.c_str(), out, shape_str(c.out[0].dims).c_str(), shape_str(shape).c_str());
  size_t es = dtype_size(c.in[1].dtype);
  *run = [c, es] {
    const auto* cond = static_cast<const uint8_t*>(c.in[0].data);
    const auto* a = static_cast<const unsigned char*>(c.in[1].data);
    const auto* b = static_cast<const unsigned char*>(c.in[2].data);
    auto* y = static_cast<unsigned char*>(c.out[0].data);
    std::array<std::vector<int64_t>, 3> s{broadcast_strides(c.in[0].dims, c.out[0].dims),
                                          broadcast_strides(c.in[1].dims, c.out[0].dims),
                                          broadcast_strides(c.in[2].dims, c.out[0].dims)};
    for_each_broadcast(c.out[0].dims, s, [&](int64_t i, const std::array<int64_t, 3>& o) {
      const unsigned char* src = cond[o[0]] ? a + o[1] * es : b + o[2] * es;
      std::memcpy(y + i * es, src, es);
    });
  };
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(elementwise, {"Pow", k_pow}, {"Add", k_add}, {"Sub", k_sub}, {"Mul", k_mul}, {"Div", k_div},
           {"RealDiv", k_div}, {"Maximum", k_maximum}, {"Minimum", k_minimum}, {"Less", k_less},
           {"LessEqual", k_less_equal}, {"Greater", k_greater}, {"GreaterEqual", k_greater_equal}, {"Equal", k_equal},
           {"NotEqual", k_not_equal}, {"Select", k_select}, {"SelectV2", k_select}, {"LogicalNot", k_logical_not},
           {"LogicalAnd", k_logical_and}, {"LogicalOr", k_logical_or}, {"IsNan", k_is_nan})

}  // namespace aclsim
