// BatchMatMul (ORT MatMul: attrs adj_x1/adj_x2, NumPy matmul shapes incl. 1-D and batch
// broadcasting), MatMulV2 (2-D x1, x2, optional bias; attrs transpose_x1/transpose_x2) and GEMM
// (ORT Gemm: A, B, C, alpha, beta; attrs transpose_a/transpose_b).
// Float types accumulate in float32 in k order and round once; int32 wraps.
#include <type_traits>

#include "dtypes.h"
#include "op_call.h"

namespace aclsim {
namespace {

struct MatShape {
  std::vector<int64_t> batch;  // broadcast batch dims of the output
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> a_batch, b_batch;  // (padded) batch dims of each input
  bool a_vec = false, b_vec = false;
};

aclError matmul_shape(const OpCall& c, bool adj_a, bool adj_b, MatShape* s) {
  std::vector<int64_t> a = c.in[0].dims, b = c.in[1].dims;
  if (a.empty() || b.empty())
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: inputs must have rank >= 1, got %s and %s", c.type.c_str(),
                shape_str(a).c_str(), shape_str(b).c_str());
  if (a.size() == 1) {
    a.insert(a.begin(), 1);
    s->a_vec = true;
  }
  if (b.size() == 1) {
    b.push_back(1);
    s->b_vec = true;
  }
  if (adj_a) std::swap(a[a.size() - 1], a[a.size() - 2]);
  if (adj_b) std::swap(b[b.size() - 1], b[b.size() - 2]);
  s->m = a[a.size() - 2];
  s->k = a[a.size() - 1];
  s->n = b[b.size() - 1];
  if (b[b.size() - 2] != s->k)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: inner dimensions differ: x1 %s has K=%lld, x2 %s has K=%lld",
                c.type.c_str(), shape_str(c.in[0].dims).c_str(), static_cast<long long>(s->k),
                shape_str(c.in[1].dims).c_str(), static_cast<long long>(b[b.size() - 2]));
  s->a_batch.assign(a.begin(), a.end() - 2);
  s->b_batch.assign(b.begin(), b.end() - 2);
  if (!broadcast_shape(s->a_batch, s->b_batch, &s->batch))
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: batch dimensions of %s and %s cannot be broadcast", c.type.c_str(),
                shape_str(c.in[0].dims).c_str(), shape_str(c.in[1].dims).c_str());
  std::vector<int64_t> out = s->batch;
  if (!s->a_vec) out.push_back(s->m);
  if (!s->b_vec) out.push_back(s->n);
  if (out != c.out[0].dims)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "%s: output 0 has shape %s, expected %s", c.type.c_str(),
                shape_str(c.out[0].dims).c_str(), shape_str(out).c_str());
  return ACL_SUCCESS;
}

// Offset (in matrices) of batch index `bi` of the output inside an input with batch dims `in`.
int64_t batch_offset(int64_t bi, const std::vector<int64_t>& out, const std::vector<int64_t>& in) {
  std::vector<int64_t> strides = broadcast_strides(in, out);
  int64_t off = 0;
  for (size_t d = out.size(); d-- > 0;) {
    int64_t idx = bi % out[d];
    bi /= out[d];
    off += idx * strides[d];
  }
  return off;
}

template <typename T>
void matmul(const OpCall& c, const MatShape& s, bool adj_a, bool adj_b) {
  using C = typename T::Compute;
  using Acc = std::conditional_t<std::is_floating_point<C>::value, C, uint32_t>;
  const auto* A = ptr<T>(c.in[0].data);
  const auto* B = ptr<T>(c.in[1].data);
  auto* Y = ptr<T>(c.out[0].data);
  int64_t nb = 1;
  for (int64_t d : s.batch) nb *= d;
  const int64_t M = s.m, K = s.k, N = s.n;
  for (int64_t bi = 0; bi < nb; ++bi) {
    const auto* a = A + batch_offset(bi, s.batch, s.a_batch) * M * K;
    const auto* b = B + batch_offset(bi, s.batch, s.b_batch) * K * N;
    auto* y = Y + bi * M * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        Acc acc = 0;
        for (int64_t p = 0; p < K; ++p) {
          C av = T::load(adj_a ? a[p * M + i] : a[i * K + p]);
          C bv = T::load(adj_b ? b[j * K + p] : b[p * N + j]);
          acc = static_cast<Acc>(acc + static_cast<Acc>(av) * static_cast<Acc>(bv));
        }
        y[i * N + j] = T::store(static_cast<C>(acc));
      }
  }
}

bool matmul_dtype(aclDataType t) { return t == ACL_FLOAT || t == ACL_FLOAT16 || t == ACL_BF16 || t == ACL_INT32; }

}  // namespace

aclError k_batch_matmul(const OpCall& c, Run* run) {
  if (c.in.size() != 2 && c.in.size() != 3)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: expected 2 inputs (x1, x2), got %zu", c.type.c_str(), c.in.size());
  if (c.in.size() == 3)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: the bias input is not simulated", c.type.c_str());
  if (c.out.size() != 1)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "%s: expected 1 output, got %zu", c.type.c_str(), c.out.size());
  if (aclError rc = expect_same_dtype(c, "input 1 (x2)", c.in[1], "input 0 (x1)", c.in[0])) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x1)", c.in[0])) return rc;
  if (!matmul_dtype(c.in[0].dtype))
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "%s: input 0 (x1) has unsupported dtype %s", c.type.c_str(),
                dtype_name(c.in[0].dtype));
  bool adj_a = c.attr_int("adj_x1", 0) || c.attr_int("transpose_x1", 0);
  bool adj_b = c.attr_int("adj_x2", 0) || c.attr_int("transpose_x2", 0);
  MatShape s;
  if (aclError rc = matmul_shape(c, adj_a, adj_b, &s)) return rc;
  visit_dtype(c.in[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    *run = [c, s, adj_a, adj_b] { matmul<T>(c, s, adj_a, adj_b); };
  });
  return ACL_SUCCESS;
}

namespace {

float load_scalar(const OpTensor& t) {
  float v = 0.0f;
  visit_dtype(t.dtype, [&](auto tag) {
    using T = decltype(tag);
    v = static_cast<float>(T::load(ptr<T>(t.data)[0]));
  });
  return v;
}

template <typename T>
void gemm(const OpCall& c, int64_t M, int64_t K, int64_t N, bool ta, bool tb) {
  const auto* A = ptr<T>(c.in[0].data);
  const auto* B = ptr<T>(c.in[1].data);
  const auto* Cm = ptr<T>(c.in[2].data);
  auto* Y = ptr<T>(c.out[0].data);
  float alpha = load_scalar(c.in[3]), beta = load_scalar(c.in[4]);
  std::vector<int64_t> out{M, N};
  std::vector<int64_t> cs = broadcast_strides(c.in[2].dims, out);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < K; ++p) {
        float av = static_cast<float>(T::load(ta ? A[p * M + i] : A[i * K + p]));
        float bv = static_cast<float>(T::load(tb ? B[j * K + p] : B[p * N + j]));
        acc += av * bv;
      }
      float cv = static_cast<float>(T::load(Cm[i * cs[0] + j * cs[1]]));
      Y[i * N + j] = T::store(static_cast<typename T::Compute>(alpha * acc + beta * cv));
    }
}

}  // namespace

aclError k_gemm(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 5, 1)) return rc;
  const OpTensor &a = c.in[0], &b = c.in[1], &cm = c.in[2];
  if (aclError rc = expect_same_dtype(c, "input 1 (b)", b, "input 0 (a)", a)) return rc;
  if (aclError rc = expect_same_dtype(c, "input 2 (c)", cm, "input 0 (a)", a)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (a)", a)) return rc;
  if (a.dtype != ACL_FLOAT && a.dtype != ACL_FLOAT16 && a.dtype != ACL_BF16)
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "GEMM: input 0 (a) has unsupported dtype %s", dtype_name(a.dtype));
  for (int i = 3; i < 5; ++i)
    if (c.in[i].numel != 1 || !is_float_type(c.in[i].dtype))
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "GEMM: input %d (%s) must be one float value, got %s %s", i,
                  i == 3 ? "alpha" : "beta", dtype_name(c.in[i].dtype), shape_str(c.in[i].dims).c_str());
  if (a.dims.size() != 2 || b.dims.size() != 2)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "GEMM: a and b must be 2-D, got %s and %s", shape_str(a.dims).c_str(),
                shape_str(b.dims).c_str());
  bool ta = c.attr_int("transpose_a", 0) != 0, tb = c.attr_int("transpose_b", 0) != 0;
  int64_t M = ta ? a.dims[1] : a.dims[0], K = ta ? a.dims[0] : a.dims[1];
  int64_t Kb = tb ? b.dims[1] : b.dims[0], N = tb ? b.dims[0] : b.dims[1];
  if (K != Kb)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "GEMM: inner dimensions differ: a %s gives K=%lld, b %s gives K=%lld",
                shape_str(a.dims).c_str(), static_cast<long long>(K), shape_str(b.dims).c_str(),
                static_cast<long long>(Kb));
  std::vector<int64_t> mn{M, N}, bc;
  if (cm.dims.size() > 2 || !broadcast_shape(cm.dims, mn, &bc) || bc != mn)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "GEMM: input 2 (c) has shape %s, not broadcastable to %s",
                shape_str(cm.dims).c_str(), shape_str(mn).c_str());
  if (c.out[0].dims != mn)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "GEMM: output 0 has shape %s, expected %s",
                shape_str(c.out[0].dims).c_str(), shape_str(mn).c_str());
  visit_listed<F32, F16, BF16>(a.dtype,
                               [&](auto t) { *run = [c, M, K, N, ta, tb] { gemm<decltype(t)>(c, M, K, N, ta, tb); }; });
  return ACL_SUCCESS;
}

namespace {

template <typename T, typename B>
void matmul_v2(const OpCall& c, int64_t M, int64_t K, int64_t N, bool ta, bool tb, bool bias) {
  const void *A = c.in[0].data, *Bm = c.in[1].data;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      if constexpr (T::kFloat) {
        float acc = 0.0f;
        for (int64_t p = 0; p < K; ++p) {
          const float av = static_cast<float>(load_at<T>(A, ta ? p * M + i : i * K + p));
          const float bv = static_cast<float>(load_at<T>(Bm, tb ? j * K + p : p * N + j));
          acc = fadd(acc, fmul(av, bv));
        }
        if (bias) acc = fadd(acc, static_cast<float>(load_at<B>(c.in[2].data, j)));
        store_at<T>(c.out[0].data, i * N + j, static_cast<typename T::Compute>(acc));
      } else {  // int32: wraps
        uint32_t acc = 0;
        for (int64_t p = 0; p < K; ++p) {
          const uint32_t av = static_cast<uint32_t>(load_at<T>(A, ta ? p * M + i : i * K + p));
          const uint32_t bv = static_cast<uint32_t>(load_at<T>(Bm, tb ? j * K + p : p * N + j));
          acc = static_cast<uint32_t>(acc + av * bv);
        }
        if (bias) acc = static_cast<uint32_t>(acc + static_cast<uint32_t>(load_at<B>(c.in[2].data, j)));
        store_at<T>(c.out[0].data, i * N + j, static_cast<int32_t>(acc));
      }
    }
}

}  // namespace

// MatMulV2(x1 [M, K] ([K, M] with transpose_x1), x2 [K, N] ([N, K] with transpose_x2), bias [N]
// (optional; float32 allowed for float16 x1), offset_w (absent); offset_x = 0) -> y [M, N]
// (mindspore-ai/graphengine@cd75e149 910/third_party/fwkacllib/inc/ops/matrix_calculation_ops.h:278).
// acc = 0, acc += x1 * x2 over k in increasing order (each product and sum rounded to float32),
// then + bias in float32, one rounding to y's dtype.
aclError k_matmul_v2(const OpCall& c, Run* run) {
  if (c.in.size() < 2 || c.in.size() > 4)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "MatMulV2: expected 2 to 4 inputs (x1, x2, bias, offset_w), got %zu",
                c.in.size());
  if (c.out.size() != 1)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "MatMulV2: expected 1 output, got %zu", c.out.size());
  const OpTensor &a = c.in[0], &b = c.in[1], &y = c.out[0];
  if (aclError rc = expect_dtype_in(c, "input 0 (x1)", a, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT32})) return rc;
  if (aclError rc = expect_same_dtype(c, "input 1 (x2)", b, "input 0 (x1)", a)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x1)", a)) return rc;
  if (c.in.size() == 4 && !c.in[3].absent)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "MatMulV2: input 3 (offset_w, int8 quantisation) is not simulated");
  if (c.attr_int("offset_x", 0) != 0)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "MatMulV2: attribute offset_x is %lld; only 0 is simulated",
                static_cast<long long>(c.attr_int("offset_x", 0)));
  if (a.dims.size() != 2 || b.dims.size() != 2)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "MatMulV2: x1 and x2 must be 2-D, got %s and %s",
                shape_str(a.dims).c_str(), shape_str(b.dims).c_str());
  const bool ta = c.attr_int("transpose_x1", 0) != 0, tb = c.attr_int("transpose_x2", 0) != 0;
  const int64_t M = ta ? a.dims[1] : a.dims[0], K = ta ? a.dims[0] : a.dims[1];
  const int64_t Kb = tb ? b.dims[1] : b.dims[0], N = tb ? b.dims[0] : b.dims[1];
  if (K != Kb)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "MatMulV2: inner dimensions differ: x1 %s gives K=%lld (transpose_x1=%d), x2 %s gives K=%lld "
                "(transpose_x2=%d)",
                shape_str(a.dims).c_str(), static_cast<long long>(K), ta ? 1 : 0, shape_str(b.dims).c_str(),
                static_cast<long long>(Kb), tb ? 1 : 0);
  const bool bias = c.in.size() >= 3 && !c.in[2].absent;
  if (bias) {
    const OpTensor& bt = c.in[2];
    const bool f32_bias_ok = a.dtype == ACL_FLOAT16 && bt.dtype == ACL_FLOAT;
    if (bt.dtype != a.dtype && !f32_bias_ok)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                  "MatMulV2: input 2 (bias) has dtype %s, expected %s (the dtype of x1%s)", dtype_name(bt.dtype),
                  dtype_name(a.dtype), a.dtype == ACL_FLOAT16 ? ", or ACL_FLOAT" : "");
    if (bt.dims != std::vector<int64_t>{N})
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "MatMulV2: input 2 (bias) has shape %s, expected [%lld]",
                  shape_str(bt.dims).c_str(), static_cast<long long>(N));
  }
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", {M, N}, "[M, N] of x1 and x2")) return rc;
  const bool f32_bias = bias && c.in[2].dtype == ACL_FLOAT;
  switch (a.dtype) {
    case ACL_FLOAT: *run = [c, M, K, N, ta, tb, bias] { matmul_v2<F32, F32>(c, M, K, N, ta, tb, bias); }; break;
    case ACL_FLOAT16:
      if (f32_bias)
        *run = [c, M, K, N, ta, tb, bias] { matmul_v2<F16, F32>(c, M, K, N, ta, tb, bias); };
      else
        *run = [c, M, K, N, ta, tb, bias] { matmul_v2<F16, F16>(c, M, K, N, ta, tb, bias); };
      break;
    case ACL_BF16: *run = [c, M, K, N, ta, tb, bias] { matmul_v2<BF16, BF16>(c, M, K, N, ta, tb, bias); }; break;
    default: *run = [c, M, K, N, ta, tb, bias] { matmul_v2<I32, I32>(c, M, K, N, ta, tb, bias); }; break;
  }
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(matmul, {"BatchMatMul", k_batch_matmul}, {"MatMul", k_batch_matmul}, {"MatMulV2", k_matmul_v2},
           {"GEMM", k_gemm})

}  // namespace aclsim
