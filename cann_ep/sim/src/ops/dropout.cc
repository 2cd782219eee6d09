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
//
// DropOutGenMask(shape, prob; seed, seed2) -> y: a bit mask for DropOutDoMask, bit i set with
// probability prob (the keep probability: "Number of bit 1").
// Spec: GE random_ops.h REG_OP(DropOutGenMask) (mindspore-ai/graphengine third_party/fwkacllib/inc/ops):
// shape int32 / int64 (the dims of the tensor to drop out), prob float16 / float32 "0-D", y uint8
// "Output (1-D)", "aligned with 128 bits": align(count, 128) / 8 bytes; ATTR seed, seed2 (Int, 0): "if
// either seed or seed2 are set to be non-zero, the random number generator is seeded by the given
// seed. Otherwise, it is seeded by a random seed". No product table (interface only).
// Bit layout (the one DropOutDoMask reads): element i is bit (i % 8) of byte i / 8, least significant
// bit first (hicann/ops-math random/drop_out_do_mask/tests/assets/golden.py reverses each byte's bits,
// then np.unpackbits: i.e. np.unpackbits(mask, bitorder="little")). Bits past the count are generated
// too (they pad the 128-bit alignment; DropOutDoMask ignores them).
// The random stream is the simulator's own (the SplitMix64 finaliser of (seed, seed2, bit index), not
// CANN's generator): for given non-zero seeds the mask is a pure function of (seed, seed2, bit index),
// the same in every call and process; both seeds 0 draw a fresh seed from std::random_device per call.
// A prob outside [0, 1] behaves as its clamp (no bit / every bit): the spec states no check.
//
// DropOutDoMask(x, mask, keep_prob) -> y = mask bit ? x * (1 / keep_prob) : 0.
// Spec: hicann/ops-math random/drop_out_do_mask/op_graph/drop_out_do_mask_proto.h and README.md: x
// float32 / float16 / bfloat16 ("bfloat16 only supported on Atlas A2 ... and Atlas A3": ascend910b,
// ascend910_93; the ascend950 kernel takes it too, op_host/arch35), 0-8-D; mask uint8 1-D of
// align(size(x), 128) / 8 bytes (the uint1 form is not modelled: refused); keep_prob "(1,)", x's dtype,
// 0 <= keep_prob <= 1 (checked when it is a constant input); y x's dtype and shape. Numerics as the
// op's golden (tests/assets/golden.py): float32 x * float32(1 / keep_prob); float16 in float16
// (scale = half(1 / keep_prob), y = half(x * scale), each rounded once to nearest even); bfloat16 in
// float32, rounded once; on ascend950 float16 also computes in float32, keep_prob 1 gives x and 0 gives
// zeros whatever the mask.
#include <cstring>
#include <random>
#include <string>

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

// The key of a (seed, seed2) pair; a bit's uniform draw is mix(key + bit index).
uint64_t stream_key(int64_t seed, int64_t seed2) {
  return mix(mix(static_cast<uint64_t>(seed)) ^ (static_cast<uint64_t>(seed2) * 0xD1B54A32D192ED03ull));
}

float scalar_as_float(const OpTensor& t) {
  if (t.dtype == ACL_FLOAT16) return static_cast<float>(load_at<F16>(t.data, 0));
  if (t.dtype == ACL_BF16) return static_cast<float>(load_at<BF16>(t.data, 0));
  return load_at<F32>(t.data, 0);
}

int64_t aligned_mask_bytes(int64_t count) { return (count + 127) / 128 * 128 / 8; }

template <typename T>
void do_mask(const OpCall& c, bool half_math, bool arch35) {
  const OpTensor &x = c.in[0], &y = c.out[0];
  const auto* bits = static_cast<const uint8_t*>(c.in[1].data);
  const float keep = scalar_as_float(c.in[2]);
  float scale = fdiv(1.0f, keep);
  if (half_math) scale = f16_to_f32(f32_to_f16(scale));  // the float16 scale, as the golden's 1.0 / keep_prob
  for (int64_t i = 0; i < x.numel; ++i) {
    const bool kept = ((bits[i / 8] >> (i % 8)) & 1) != 0;
    const float v = static_cast<float>(load_at<T>(x.data, i));
    float out = kept ? fmul(v, scale) : 0.0f;
    if (arch35 && keep == 1.0f) out = v;
    if (arch35 && keep == 0.0f) out = 0.0f;
    store_at<T>(y.data, i, static_cast<typename T::Compute>(out));
  }
}

}  // namespace

aclError k_drop_out_gen_mask(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  std::vector<int64_t> dims;
  bool known = false;
  if (aclError rc = read_index_list(c, 0, "input 0 (shape)", /*need_const=*/false, &dims, &known)) return rc;
  const OpTensor &prob = c.in[1], &y = c.out[0];
  if (aclError rc = expect_dtype_in(c, "input 1 (prob)", prob, {ACL_FLOAT, ACL_FLOAT16})) return rc;
  if (aclError rc = expect_one_element(c, "input 1 (prob)", prob)) return rc;
  if (y.dtype != ACL_UINT8 || y.dims.size() != 1 || y.numel % 16 != 0)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                "DropOutGenMask: output 0 (y) is %s %s, expected 1-D uint8 of a multiple of 16 bytes (128-bit aligned)",
                dtype_name(y.dtype), shape_str(y.dims).c_str());
  if (known) {
    int64_t count = 1;
    for (int64_t d : dims) {
      if (d < 0)
        return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "DropOutGenMask: input 0 (shape) %s has a negative dim",
                    shape_str(dims).c_str());
      count *= d;
    }
    if (y.numel != aligned_mask_bytes(count))
      return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                  "DropOutGenMask: output 0 (y) has %lld bytes, expected align(%lld, 128) / 8 = %lld for shape %s",
                  static_cast<long long>(y.numel), static_cast<long long>(count),
                  static_cast<long long>(aligned_mask_bytes(count)), shape_str(dims).c_str());
  }
  int64_t seed = c.attr_int("seed", 0), seed2 = c.attr_int("seed2", 0);
  if (seed == 0 && seed2 == 0) {
    std::random_device device;
    seed = static_cast<int64_t>((static_cast<uint64_t>(device()) << 32) | device()) | 1;
  }
  const uint64_t key = stream_key(seed, seed2);
  *run = [c, key] {
    const double keep = static_cast<double>(scalar_as_float(c.in[1]));
    auto* out = static_cast<uint8_t*>(c.out[0].data);
    for (int64_t b = 0; b < c.out[0].numel; ++b) {
      uint8_t byte = 0;
      for (int bit = 0; bit < 8; ++bit) {
        const uint64_t r = mix(key + static_cast<uint64_t>(b * 8 + bit));
        if (static_cast<double>(r >> 11) * 0x1.0p-53 < keep) byte = static_cast<uint8_t>(byte | (1u << bit));
      }
      out[b] = byte;
    }
  };
  return ACL_SUCCESS;
}

aclError k_drop_out_do_mask(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 3, 1)) return rc;
  const OpTensor &x = c.in[0], &mask = c.in[1], &keep = c.in[2], &y = c.out[0];
  const std::string family = soc_family();
  const bool bf16_ok = family == "ascend910b" || family == "ascend910_93" || family == "ascend950";
  if (x.dtype == ACL_BF16 && !bf16_ok)
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                "DropOutDoMask: input 0 (x) is bfloat16, which SoC family %s does not take (bfloat16 only on "
                "Atlas A2/A3: drop_out_do_mask_proto.h)",
                family.c_str());
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", x, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  if (x.dims.size() > 8)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "DropOutDoMask: input 0 (x) has rank %zu, expected 0 to 8",
                x.dims.size());
  if (mask.dtype != ACL_UINT8 || mask.dims.size() != 1 || mask.numel != aligned_mask_bytes(x.numel))
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "DropOutDoMask: input 1 (mask) is %s %s, expected uint8 [%lld] (align(size(x) = %lld, 128) / 8)",
                dtype_name(mask.dtype), shape_str(mask.dims).c_str(),
                static_cast<long long>(aligned_mask_bytes(x.numel)), static_cast<long long>(x.numel));
  if (aclError rc = expect_same_dtype(c, "input 2 (keep_prob)", keep, "input 0 (x)", x)) return rc;
  if (aclError rc = expect_one_element(c, "input 2 (keep_prob)", keep)) return rc;
  if (keep.is_const) {
    const float k = scalar_as_float(keep);
    if (!(k >= 0.0f && k <= 1.0f))
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                  "DropOutDoMask: input 2 (keep_prob) is %g, expected 0 <= keep_prob <= 1", static_cast<double>(k));
  }
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  const bool arch35 = family == "ascend950";
  if (x.dtype == ACL_FLOAT)
    *run = [c, arch35] { do_mask<F32>(c, false, arch35); };
  else if (x.dtype == ACL_FLOAT16)
    *run = [c, arch35] { do_mask<F16>(c, !arch35, arch35); };
  else
    *run = [c, arch35] { do_mask<BF16>(c, false, arch35); };
  return ACL_SUCCESS;
}

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
ACLSIM_OPS(dropout, {"DropoutV2", k_dropout_v2}, {"DropOutGenMask", k_drop_out_gen_mask},
           {"DropOutDoMask", k_drop_out_do_mask})

}  // namespace aclsim
