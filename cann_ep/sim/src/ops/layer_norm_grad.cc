// LayerNormGradV3 (hicann/ops-nn norm/layer_norm_grad_v3: README.md, op_graph/layer_norm_grad_v3_proto.h,
// op_host/layer_norm_grad_v3_def.cpp and _infershape.cpp): (dy, x, rstd, mean, gamma) -> (pd_x,
// pd_gamma, pd_beta), attribute output_mask (ListBool, default {true, true, true}; every output is
// written here). x of dims [A1..Ai, R1..Rj], dy x's dims, gamma [R1..Rj] (the normalised dims),
// rstd and mean [A1..Ai, 1..1] (j ones); pd_x x's dims, pd_gamma and pd_beta gamma's. The dtype rows
// of the def (dy = x = pd_x; rstd = mean = float32; (dy, gamma, pd_gamma = pd_beta)): (f32, f32, f32),
// (f16, f32, f32), (f16, f16, f32), (bf16, f32, f32), (bf16, bf16, f32), (f16, f16, f16),
// (bf16, bf16, bf16); others fail. README: Ascend 950, Atlas A2/A3 (soc.cc's table).
//
// Numerics, the README's formula in float32 (float16/bfloat16 read exactly), each operation rounded,
// sums from 0 in increasing order: per row xhat_k = (x_k - mean) * rstd, g_k = dy_k * gamma_k,
// s1 = sum g_k, s2 = sum g_k * xhat_k, pd_x_k = (g_k - (s1 / N + xhat_k * (s2 / N))) * rstd;
// pd_gamma_k = sum over rows of dy * xhat, pd_beta_k = sum over rows of dy; one rounding per output.
#include <algorithm>
#include <string>
#include <vector>

#include "dtypes.h"
#include "internal.h"
#include "numerics.h"
#include "op_call.h"
#include "norm_grad_dtype_rows.h"

namespace aclsim {
aclError k_layer_norm_grad_v3(const OpCall& c, Run* run) {
  const char* op = c.type.c_str();
  if (aclError rc = expect_counts(c, 5, 3)) return rc;
  const OpTensor &dy = c.in[0], &x = c.in[1], &rstd = c.in[2], &mean = c.in[3], &gamma = c.in[4];
  if (aclError rc = expect_dtype_in(c, "input 0 (dy)", dy, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  if (aclError rc = expect_same_dtype(c, "input 1 (x)", x, "input 0 (dy)", dy)) return rc;
  if (aclError rc = expect_dtype_in(c, "input 2 (rstd)", rstd, {ACL_FLOAT})) return rc;
  if (aclError rc = expect_dtype_in(c, "input 3 (mean)", mean, {ACL_FLOAT})) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (pd_x)", c.out[0], "input 0 (dy)", dy)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 2 (pd_beta)", c.out[2], "output 1 (pd_gamma)", c.out[1])) return rc;
  if (!norm_grad_dtype_row(dy.dtype, gamma.dtype, c.out[1].dtype))
    return fail(
        ACL_ERROR_UNSUPPORTED_DATA_TYPE,
        "%s: dy %s, gamma %s, pd_gamma %s is not a dtype row of the op's definition (layer_norm_grad_v3_def.cpp)", op,
        dtype_name(dy.dtype), dtype_name(gamma.dtype), dtype_name(c.out[1].dtype));
  if (aclError rc = expect_same_shape(c, "input 1 (x)", x, "input 0 (dy)", dy)) return rc;
  const size_t rank = x.dims.size(), j = gamma.dims.size();
  if (j == 0 || j > rank || !std::equal(gamma.dims.begin(), gamma.dims.end(), x.dims.end() - static_cast<long>(j)))
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 4 (gamma) has shape %s: not the last dims of x %s", op,
                shape_str(gamma.dims).c_str(), shape_str(x.dims).c_str());
  std::vector<int64_t> stats(x.dims.begin(), x.dims.end() - static_cast<long>(j));
  stats.resize(rank, 1);
  if (rstd.dims != stats || mean.dims != stats)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: rstd %s and mean %s must be %s (x %s, gamma %s)", op,
                shape_str(rstd.dims).c_str(), shape_str(mean.dims).c_str(), shape_str(stats).c_str(),
                shape_str(x.dims).c_str(), shape_str(gamma.dims).c_str());
  if (aclError rc = expect_output_shape(c, 0, "output 0 (pd_x)", x.dims, "x's shape")) return rc;
  if (aclError rc = expect_output_shape(c, 1, "output 1 (pd_gamma)", gamma.dims, "gamma's shape")) return rc;
  if (aclError rc = expect_output_shape(c, 2, "output 2 (pd_beta)", gamma.dims, "gamma's shape")) return rc;
  int64_t rows = 1, n = 1;
  for (size_t d = 0; d < rank; ++d) (d + j < rank ? rows : n) *= x.dims[d];
  *run = [c, rows, n] {
    const OpTensor &dy = c.in[0], &x = c.in[1], &rstd = c.in[2], &mean = c.in[3], &gamma = c.in[4];
    auto xhat = [&](int64_t r, int64_t k) {
      return fmul(fsub(load_float(x.dtype, x.data, r * n + k), load_at<F32>(mean.data, r)), load_at<F32>(rstd.data, r));
    };
    const float count = static_cast<float>(n);
    for (int64_t r = 0; r < rows; ++r) {
      float s1 = 0.0f, s2 = 0.0f;
      for (int64_t k = 0; k < n; ++k) {
        const float g = fmul(load_float(dy.dtype, dy.data, r * n + k), load_float(gamma.dtype, gamma.data, k));
        const float gx = fmul(g, xhat(r, k));
        s1 = fadd(s1, g);
        s2 = fadd(s2, gx);
      }
      const float a = fdiv(s1, count), b = fdiv(s2, count), rs = load_at<F32>(rstd.data, r);
      for (int64_t k = 0; k < n; ++k) {
        const float g = fmul(load_float(dy.dtype, dy.data, r * n + k), load_float(gamma.dtype, gamma.data, k));
        store_float(c.out[0].dtype, c.out[0].data, r * n + k, fmul(fsub(g, fadd(a, fmul(xhat(r, k), b))), rs));
      }
    }
    for (int64_t k = 0; k < n; ++k) {
      float ds = 0.0f, db = 0.0f;
      for (int64_t r = 0; r < rows; ++r) {
        const float d = load_float(dy.dtype, dy.data, r * n + k);
        const float dxh = fmul(d, xhat(r, k));
        ds = fadd(ds, dxh);
        db = fadd(db, d);
      }
      store_float(c.out[1].dtype, c.out[1].data, k, ds);
      store_float(c.out[2].dtype, c.out[2].data, k, db);
    }
  };
  return ACL_SUCCESS;
}

ACLSIM_OPS(layer_norm_grad, {"LayerNormGradV3", k_layer_norm_grad_v3})

}  // namespace aclsim
