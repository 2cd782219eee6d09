// Unary kernels: Relu, the math family (Abs, Neg, Exp, Log, ..., Sign) and Cast.
// Half types compute in float32 and round once, like NumPy's float16 ufunc loops.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "dtypes.h"
#include "op_call.h"

namespace aclsim {
namespace {

enum class Fn {
  kAbs,
  kNeg,
  kExp,
  kLog,
  kSqrt,
  kReciprocal,
  kFloor,
  kCeil,
  kRound,
  kSin,
  kCos,
  kErf,
  kTanh,
  kSigmoid,
  kSign
};

bool parse_fn(const std::string& t, Fn* f) {
  static const struct {
    const char* name;
    Fn fn;
  } kFns[] = {{"Abs", Fn::kAbs},     {"Neg", Fn::kNeg},         {"Exp", Fn::kExp},
              {"Log", Fn::kLog},     {"Sqrt", Fn::kSqrt},       {"Reciprocal", Fn::kReciprocal},
              {"Floor", Fn::kFloor}, {"Ceil", Fn::kCeil},       {"Round", Fn::kRound},
              {"Sin", Fn::kSin},     {"Cos", Fn::kCos},         {"Erf", Fn::kErf},
              {"Tanh", Fn::kTanh},   {"Sigmoid", Fn::kSigmoid}, {"Sign", Fn::kSign}};
  for (const auto& e : kFns)
    if (t == e.name) {
      *f = e.fn;
      return true;
    }
  return false;
}

// Sign as CANN's kernel computes it (hicann/ops-math math/sign/op_kernel/arch35/sign.h): (x > 0) - (x < 0)
// with each compare selecting 1 or 0, so NaN and -0.0 give +0 (bfloat16 through float32: the same values).
template <typename C>
C sign(C x) {
  return static_cast<C>((x > C(0) ? C(1) : C(0)) - (x < C(0) ? C(1) : C(0)));
}

// Exp/Log follow CANN's attributes: base (-1 = e), scale, shift: y = base^(scale*x+shift),
// y = log_base(scale*x+shift). The EP sends base=-1, scale=1, shift=0.
template <typename C>
C apply(Fn f, C x, C base, C scale, C shift) {
  if constexpr (std::is_floating_point<C>::value) {
    bool affine = !(scale == C(1) && shift == C(0));
    C z = affine ? scale * x + shift : x;
    switch (f) {
      case Fn::kAbs: return std::fabs(x);
      case Fn::kNeg: return -x;
      case Fn::kExp: return base <= C(0) ? std::exp(z) : std::exp(z * std::log(base));
      case Fn::kLog: return base <= C(0) ? std::log(z) : std::log(z) / std::log(base);
      case Fn::kSqrt: return std::sqrt(x);
      case Fn::kReciprocal: return C(1) / x;
      case Fn::kFloor: return std::floor(x);
      case Fn::kCeil: return std::ceil(x);
      case Fn::kRound: return std::nearbyint(x);  // ties to even, like ONNX Round
      case Fn::kSin: return std::sin(x);
      case Fn::kCos: return std::cos(x);
      case Fn::kErf: return std::erf(x);
      case Fn::kTanh: return std::tanh(x);
      case Fn::kSigmoid: return C(1) / (C(1) + std::exp(-x));
      case Fn::kSign: return sign(x);
    }
    return x;
  } else {
    using U = std::make_unsigned_t<C>;
    switch (f) {
      case Fn::kAbs:
        if constexpr (std::is_signed<C>::value) return x < 0 ? static_cast<C>(U(0) - static_cast<U>(x)) : x;
        return x;
      case Fn::kNeg: return static_cast<C>(U(0) - static_cast<U>(x));
      case Fn::kSign: return sign(x);
      default: return x;  // rejected before launch
    }
  }
}

}  // namespace

// Relu: x < 0 -> +0, otherwise x (NaN and -0.0 pass through, like np.maximum(x, 0)).
aclError k_relu(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  aclDataType t = c.in[0].dtype;
  if (t == ACL_BOOL || t == ACL_UINT16 || t == ACL_UINT32 || t == ACL_UINT64)
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "Relu: input 0 (x) has unsupported dtype %s", dtype_name(t));
  visit_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    *run = [c] {
      const auto* x = ptr<T>(c.in[0].data);
      auto* y = ptr<T>(c.out[0].data);
      for (int64_t i = 0; i < c.out[0].numel; ++i) {
        auto v = T::load(x[i]);
        bool negative = false;
        if constexpr (std::is_signed<decltype(v)>::value) negative = v < 0;
        y[i] = negative ? T::store(0) : x[i];
      }
    };
  });
  return ACL_SUCCESS;
}

aclError k_unary(const OpCall& c, Run* run) {
  Fn f;
  if (!parse_fn(c.type, &f)) return fail(ACL_ERROR_OP_NOT_FOUND, "unary op \"%s\" is not simulated", c.type.c_str());
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  aclDataType t = c.in[0].dtype;
  bool int_ok = (f == Fn::kAbs || f == Fn::kNeg) && t != ACL_BOOL;
  if (f == Fn::kSign) {  // math/sign/op_host/sign_def.cpp: bfloat16, float16, float32, int32, int64
    if (aclError rc =
            expect_dtype_in(c, "input 0 (x)", c.in[0], {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT32, ACL_INT64}))
      return rc;
    int_ok = true;
  }
  if (!is_float_type(t) && !int_ok)
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "%s: input 0 (x) has unsupported dtype %s", c.type.c_str(),
                dtype_name(t));
  float base = c.attr_float("base", -1.0f), scale = c.attr_float("scale", 1.0f), shift = c.attr_float("shift", 0.0f);
  visit_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    using C = typename T::Compute;
    *run = [c, f, base, scale, shift] {
      const auto* x = ptr<T>(c.in[0].data);
      auto* y = ptr<T>(c.out[0].data);
      for (int64_t i = 0; i < c.out[0].numel; ++i)
        y[i] = T::store(apply<C>(f, T::load(x[i]), static_cast<C>(base), static_cast<C>(scale), static_cast<C>(shift)));
    };
  });
  return ACL_SUCCESS;
}

namespace {

template <typename D>
typename D::Storage convert_from_double(double v) {
  using C = typename D::Compute;
  if constexpr (D::kBool) {
    return v != 0.0 ? 1 : 0;  // NaN -> true
  } else if constexpr (std::is_floating_point<C>::value) {
    return D::store(static_cast<C>(v));
  } else {
    return saturate_trunc<C>(v);  // toward zero; NaN -> 0, out of range saturates
  }
}

}  // namespace

// Cast(x) -> y of dtype dst_type. Float sources convert from their exact float32/float64
// value (float32 -> float16/bfloat16 rounds like NumPy / ml_dtypes; float -> integer truncates
// toward zero, NaN -> 0, out of range saturates); ints wrap like NumPy; bool <-> x is 0/1, x != 0.
aclError k_cast(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  if (c.has_attr("dst_type") && c.attr_int("dst_type", -1) != c.out[0].dtype)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "Cast: attribute dst_type=%lld does not match output 0 dtype %s (%d)",
                static_cast<long long>(c.attr_int("dst_type", -1)), dtype_name(c.out[0].dtype),
                static_cast<int>(c.out[0].dtype));
  bool ok_src = false, ok_dst = false;
  ok_src = visit_dtype(c.in[0].dtype, [&](auto stag) {
    using S = decltype(stag);
    ok_dst = visit_dtype(c.out[0].dtype, [&](auto dtag) {
      using D = decltype(dtag);
      *run = [c] {
        for (int64_t i = 0; i < c.out[0].numel; ++i) {
          auto v = load_at<S>(c.in[0].data, i);
          if constexpr (S::kBool) v = v != 0 ? 1 : 0;  // any non-zero byte is true
          using SC = decltype(v);
          using DC = typename D::Compute;
          typename D::Storage y;
          if constexpr (std::is_same<SC, float>::value && std::is_same<DC, float>::value) {
            y = D::store(v);  // float32 / half <-> float32 / half: exact value, one rounding
          } else if constexpr (std::is_floating_point<SC>::value) {
            y = convert_from_double<D>(static_cast<double>(v));
          } else if constexpr (D::kBool) {
            y = v != 0 ? 1 : 0;
          } else if constexpr (std::is_floating_point<DC>::value) {
            y = D::store(static_cast<DC>(v));
          } else {
            y = static_cast<typename D::Storage>(v);  // integer -> integer wraps
          }
          std::memcpy(static_cast<unsigned char*>(c.out[0].data) + i * sizeof(y), &y, sizeof(y));
        }
      };
    });
  });
  if (!ok_src)
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "Cast: input 0 (x) has unsupported dtype %s",
                dtype_name(c.in[0].dtype));
  if (!ok_dst)
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "Cast: output 0 (y) has unsupported dtype %s",
                dtype_name(c.out[0].dtype));
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(unary, {"Relu", k_relu}, {"Abs", k_unary}, {"Neg", k_unary}, {"Exp", k_unary}, {"Log", k_unary},
           {"Sqrt", k_unary}, {"Reciprocal", k_unary}, {"Floor", k_unary}, {"Ceil", k_unary}, {"Round", k_unary},
           {"Sin", k_unary}, {"Cos", k_unary}, {"Erf", k_unary}, {"Tanh", k_unary}, {"Sigmoid", k_unary},
           {"Sign", k_unary}, {"Cast", k_cast})

}  // namespace aclsim
