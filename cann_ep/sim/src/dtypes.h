// Per-dtype storage/compute types and a visitor over the dtypes the kernels support.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "numerics.h"
#include "tensor.h"

namespace aclsim {

template <aclDataType D, typename S, typename C>
struct PlainType {
  static constexpr aclDataType kType = D;
  using Storage = S;
  using Compute = C;
  static constexpr bool kFloat = std::is_floating_point<C>::value;
  static constexpr bool kBool = false;
  static C load(S v) { return static_cast<C>(v); }
  static S store(C v) { return static_cast<S>(v); }
};

struct F32 : PlainType<ACL_FLOAT, float, float> {};
struct F64 : PlainType<ACL_DOUBLE, double, double> {};
struct I8 : PlainType<ACL_INT8, int8_t, int8_t> {};
struct I16 : PlainType<ACL_INT16, int16_t, int16_t> {};
struct I32 : PlainType<ACL_INT32, int32_t, int32_t> {};
struct I64 : PlainType<ACL_INT64, int64_t, int64_t> {};
struct U8 : PlainType<ACL_UINT8, uint8_t, uint8_t> {};
struct U16 : PlainType<ACL_UINT16, uint16_t, uint16_t> {};
struct U32 : PlainType<ACL_UINT32, uint32_t, uint32_t> {};
struct U64 : PlainType<ACL_UINT64, uint64_t, uint64_t> {};
struct Bool : PlainType<ACL_BOOL, uint8_t, uint8_t> {
  static constexpr bool kBool = true;
};
// Half types compute in float32 and round once when stored (numerics.h's conversions).
template <aclDataType D, float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
struct HalfType {
  static constexpr aclDataType kType = D;
  using Storage = uint16_t;
  using Compute = float;
  static constexpr bool kFloat = true;
  static constexpr bool kBool = false;
  static float load(uint16_t v) { return ToFloat(v); }
  static uint16_t store(float v) { return FromFloat(v); }
};
struct F16 : HalfType<ACL_FLOAT16, f16_to_f32, f32_to_f16> {};
struct BF16 : HalfType<ACL_BF16, bf16_to_f32, f32_to_bf16> {};

// For a kernel whose inputs were validated to one of the dtypes Ts: calls f(T{}) for the T of
// dtype `t`, the last of Ts for any other (the kernel's own list: each T is instantiated).
template <typename T, typename... Rest, typename F>
void visit_listed(aclDataType t, F&& f) {
  if constexpr (sizeof...(Rest) == 0) {
    f(T{});
  } else if (t == T::kType) {
    f(T{});
  } else {
    visit_listed<Rest...>(t, f);
  }
}

// Calls f(T{}) for the dtype's traits; returns false for dtypes the simulator lacks.
template <typename F>
bool visit_dtype(aclDataType t, F&& f) {
  switch (t) {
    case ACL_FLOAT: f(F32{}); return true;
    case ACL_FLOAT16: f(F16{}); return true;
    case ACL_BF16: f(BF16{}); return true;
    case ACL_DOUBLE: f(F64{}); return true;
    case ACL_INT8: f(I8{}); return true;
    case ACL_INT16: f(I16{}); return true;
    case ACL_INT32: f(I32{}); return true;
    case ACL_INT64: f(I64{}); return true;
    case ACL_UINT8: f(U8{}); return true;
    case ACL_UINT16: f(U16{}); return true;
    case ACL_UINT32: f(U32{}); return true;
    case ACL_UINT64: f(U64{}); return true;
    case ACL_BOOL: f(Bool{}); return true;
    default: return false;
  }
}

inline bool is_float_type(aclDataType t) {
  return t == ACL_FLOAT || t == ACL_FLOAT16 || t == ACL_BF16 || t == ACL_DOUBLE;
}

template <typename T>
typename T::Storage* ptr(void* p) {
  return static_cast<typename T::Storage*>(p);
}

// Element access through memcpy: op buffers carry no alignment guarantee (an ACL data buffer may
// start anywhere inside a device block), so kernels never dereference typed pointers into them.
template <typename T>
typename T::Compute load_at(const void* base, int64_t i) {
  typename T::Storage s;
  std::memcpy(&s, static_cast<const unsigned char*>(base) + i * static_cast<int64_t>(sizeof(s)), sizeof(s));
  return T::load(s);
}

template <typename T>
void store_at(void* base, int64_t i, typename T::Compute v) {
  const typename T::Storage s = T::store(v);
  std::memcpy(static_cast<unsigned char*>(base) + i * static_cast<int64_t>(sizeof(s)), &s, sizeof(s));
}

// Element i of a float32 / float16 / bfloat16 buffer whose type is known at run time, as float32
// (exact), and the store of a float32 value into one (rounded once, to nearest even).
inline float load_float(aclDataType type, const void* base, int64_t i) {
  if (type == ACL_FLOAT16) return static_cast<float>(load_at<F16>(base, i));
  if (type == ACL_BF16) return static_cast<float>(load_at<BF16>(base, i));
  return load_at<F32>(base, i);
}

inline void store_float(aclDataType type, void* base, int64_t i, float v) {
  if (type == ACL_FLOAT16) return store_at<F16>(base, i, static_cast<F16::Compute>(v));
  if (type == ACL_BF16) return store_at<BF16>(base, i, static_cast<BF16::Compute>(v));
  store_at<F32>(base, i, v);
}

}  // namespace aclsim
