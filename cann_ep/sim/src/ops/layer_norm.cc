// LayerNormV4(x, normalized_shape, gamma?, beta?; epsilon = 1e-5) -> y, mean, rstd: normalisation over the
// trailing dims of x that normalized_shape names (hicann/ops-nn@41ec22c5 norm/layer_norm_v4/README.md: mean =
// E[x], rstd = 1 / sqrt(Var[x] + eps), y = w * ((x - mean) * rstd) + b, Var the biased variance; interface
// op_host/layer_norm_v4_def.cpp: x float32 / float16 / bfloat16; normalized_shape int32 (int64 only on the
// ascend950 / ascend350 configuration); gamma, beta optional, float32 or x's type (both the same when both are
// given); y x's type; mean and rstd float32, shaped [A1..Ai, 1..1]).
// Numerics: x (and gamma, beta) load exactly into float32; per row of R = prod(normalized_shape) elements, two
// passes as the arch35 kernel (op_kernel/arch35/layer_norm_v4_two_pass.h: AscendC::LayerNorm with binary-add
// reductions): mean = row_sum(x) / R, var = row_sum((x - mean)^2) / R (row_sum.h: blocks of 64 in index order,
// combined pairwise), rstd = 1 / sqrtf(var + eps), y = ((x - mean) * rstd) * gamma + beta, one float32 rounding per
// operation (no FMA), y stored with one rounding to its type. An absent gamma counts as 1 and an absent beta as 0
// (the README: the interface builds those tensors), so they cost no operation.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "dtypes.h"
#include "op_call.h"
#include "row_sum.h"

namespace aclsim {
namespace {

const char* const kInputNames[] = {"x", "normalized_shape", "gamma", "beta"};
const char* const kOutputNames[] = {"y", "mean", "rstd"};
constexpr float kDefaultEpsilon = 1e-5f;

template <typename T>
float load_f32(const void* p, int64_t i) {
  return static_cast<float>(load_at<T>(p, i));
}

template <typename X, typename W>
void layer_norm(const OpCall& c, int64_t rows, int64_t r, float epsilon) {
  const void* x = c.in[0].data;
  const OpTensor &gamma = c.in[2], &beta = c.in[3];
  void* y = c.out[0].data;
  auto* mean_out = static_cast<float*>(c.out[1].data);
  auto* rstd_out = static_cast<float*>(c.out[2].data);
  const float n = static_cast<float>(r);
  std::vector<float> row(static_cast<size_t>(r)), centred(static_cast<size_t>(r)), squares(static_cast<size_t>(r));
  for (int64_t a = 0; a < rows; ++a) {
    const int64_t base = a * r;
    for (int64_t k = 0; k < r; ++k) row[k] = load_f32<X>(x, base + k);
    const float mean = fdiv(row_sum(row.data(), row.size()), n);
    for (int64_t k = 0; k < r; ++k) {
      centred[k] = fsub(row[k], mean);
      squares[k] = fmul(centred[k], centred[k]);
    }
    const float var = fdiv(row_sum(squares.data(), squares.size()), n);
    const float rstd = fdiv(1.0f, std::sqrt(fadd(var, epsilon)));
    for (int64_t k = 0; k < r; ++k) {
      float v = fmul(centred[k], rstd);
      if (!gamma.absent) v = fmul(v, load_f32<W>(gamma.data, k));
      if (!beta.absent) v = fadd(v, load_f32<W>(beta.data, k));
      store_at<X>(y, base + k, static_cast<typename X::Compute>(v));
    }
    std::memcpy(mean_out + a, &mean, sizeof(float));
    std::memcpy(rstd_out + a, &rstd, sizeof(float));
  }
}

}  // namespace

aclError k_layer_norm_v4(const OpCall& c, Run* run) {
  if (c.in.size() < 2 || c.in.size() > 4 || c.out.size() != 3)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "LayerNormV4: %zu inputs and %zu outputs, expected 2 to 4 inputs (x, normalized_shape, gamma?, beta?) "
                "and 3 outputs (y, mean, rstd)",
                c.in.size(), c.out.size());
  const OpTensor& x = c.in[0];
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", x, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  if (aclError rc = expect_dtype_in(c, "input 1 (normalized_shape)", c.in[1], {ACL_INT32})) return rc;
  std::vector<int64_t> normalized;
  bool known = false;
  if (aclError rc = read_index_list(c, 1, "input 1 (normalized_shape)", true, &normalized, &known)) return rc;
  const size_t rank = x.dims.size();
  if (normalized.empty() || normalized.size() > rank)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "LayerNormV4: input 1 (normalized_shape) is %s, expected 1 to %zu trailing dims of input 0 (x) %s",
                shape_str(normalized).c_str(), rank, shape_str(x.dims).c_str());
  const size_t begin = rank - normalized.size();
  const std::vector<int64_t> trailing(x.dims.begin() + static_cast<std::ptrdiff_t>(begin), x.dims.end());
  if (trailing != normalized)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "LayerNormV4: input 1 (normalized_shape) is %s, not the trailing dims of input 0 (x) %s",
                shape_str(normalized).c_str(), shape_str(x.dims).c_str());
  int64_t rows = 1, r = 1;
  for (size_t d = 0; d < rank; ++d) (d < begin ? rows : r) *= x.dims[d];
  // gamma and beta: float32 or x's type, one type when both are given, shape normalized_shape
  aclDataType weight = ACL_DT_UNDEFINED;
  for (size_t i = 2; i < c.in.size(); ++i) {
    const OpTensor& t = c.in[i];
    if (t.absent) continue;
    const std::string what = "input " + std::to_string(i) + " (" + kInputNames[i] + ")";
    if (t.dtype != ACL_FLOAT && t.dtype != x.dtype)
      return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "LayerNormV4: %s has dtype %s, expected float32 or x's %s",
                  what.c_str(), dtype_name(t.dtype), dtype_name(x.dtype));
    if (weight != ACL_DT_UNDEFINED && t.dtype != weight)
      return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "LayerNormV4: %s has dtype %s, gamma %s: expected one dtype",
                  what.c_str(), dtype_name(t.dtype), dtype_name(weight));
    weight = t.dtype;
    if (t.dims != normalized)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "LayerNormV4: %s has shape %s, expected normalized_shape %s",
                  what.c_str(), shape_str(t.dims).c_str(), shape_str(normalized).c_str());
  }
  const OpTensor& y = c.out[0];
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  std::vector<int64_t> stats(x.dims.begin(), x.dims.begin() + static_cast<std::ptrdiff_t>(begin));
  stats.resize(rank, 1);
  for (size_t o = 1; o < 3; ++o) {
    const OpTensor& t = c.out[o];
    const std::string what = "output " + std::to_string(o) + " (" + kOutputNames[o] + ")";
    if (t.dtype != ACL_FLOAT)
      return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "LayerNormV4: %s has dtype %s, expected float32", what.c_str(),
                  dtype_name(t.dtype));
    if (aclError rc = expect_output_shape(c, o, what.c_str(), stats, "x's dims before the normalised ones, then 1s"))
      return rc;
  }
  const float epsilon = c.attr_float("epsilon", kDefaultEpsilon);
  const bool f32_weights = weight == ACL_DT_UNDEFINED || weight == ACL_FLOAT;
  visit_listed<F32, F16, BF16>(x.dtype, [&](auto t) {
    using X = decltype(t);
    if (f32_weights)
      *run = [c, rows, r, epsilon] { layer_norm<X, F32>(c, rows, r, epsilon); };
    else
      *run = [c, rows, r, epsilon] { layer_norm<X, X>(c, rows, r, epsilon); };
  });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(layer_norm, {"LayerNormV4", k_layer_norm_v4})

}  // namespace aclsim
