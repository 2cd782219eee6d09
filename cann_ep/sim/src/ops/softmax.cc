// Softmax family: SoftmaxV2 and LogSoftmaxV2 (one axis) and SoftmaxCrossEntropyWithLogits ([N, C]
// features and soft labels -> per-row loss and backprop). float32 math (float16/bfloat16 load
// exactly, results round once); along the reduced axis:
//   m = max (a NaN makes it NaN), sub = x - m, e = expf(sub), s = row_sum(e) (blocks of 64 in
//   index order, combined pairwise: row_sum.h), ls = logf(s)
//   SoftmaxV2 (hicann/ops-nn@31dc6805 activation/softmax_v2/README.md: y_i = e^x_i / sum_j e^x_j;
//   x, y float/float16/bfloat16, attr axes "only one axis, default -1", half_to_float: with true a
//   float16 x gives a float32 y): y = e / s
//   LogSoftmaxV2: y = sub - ls
//   SoftmaxCrossEntropyWithLogits (hicann/ops-nn@e5c3fa93 activation/softmax_cross_entropy_with_logits/
//   op_kernel/arch35/softmax_cross_entropy_with_logits_full_load.h:213-237, VfBackProp):
//     backprop = e / s - labels; loss = sum over c (from the first term) of (ls - sub) * labels.
#include <cmath>
#include <limits>
#include <vector>

#include "axis_split.h"
#include "dtypes.h"
#include "op_call.h"
#include "row_sum.h"

namespace aclsim {
namespace {

// The running maximum CANN's pooling/softmax kernels keep: a larger value or any NaN replaces it.
inline bool replaces_max(float v, float m) { return v > m || v != v; }

// SoftmaxV2 (log = false) or LogSoftmaxV2 (log = true) of X along one axis; Y: the output's type.
template <typename X, typename Y>
void softmax_along(const OpCall& c, AxisSplit a, bool log) {
  const void* x = c.in[0].data;
  void* y = c.out[0].data;
  std::vector<float> e(static_cast<size_t>(a.n));
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t in = 0; in < a.inner; ++in) {
      const int64_t base = o * a.n * a.inner + in;
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < a.n; ++k) {
        const float v = static_cast<float>(load_at<X>(x, base + k * a.inner));
        if (replaces_max(v, m)) m = v;
      }
      for (int64_t k = 0; k < a.n; ++k)
        e[static_cast<size_t>(k)] = std::exp(fsub(static_cast<float>(load_at<X>(x, base + k * a.inner)), m));
      const float s = a.n > 0 ? row_sum(e.data(), e.size()) : 0.0f;
      const float ls = log ? std::log(s) : 0.0f;
      for (int64_t k = 0; k < a.n; ++k) {
        const float sub = fsub(static_cast<float>(load_at<X>(x, base + k * a.inner)), m);
        const float v = log ? fsub(sub, ls) : fdiv(e[static_cast<size_t>(k)], s);
        store_at<Y>(y, base + k * a.inner, static_cast<typename Y::Compute>(v));
      }
    }
}

template <typename T>
void softmax_cross_entropy(const OpCall& c, int64_t n, int64_t classes) {
  const void *x = c.in[0].data, *labels = c.in[1].data;
  void *loss = c.out[0].data, *backprop = c.out[1].data;
  std::vector<float> sub(static_cast<size_t>(classes)), e(static_cast<size_t>(classes));
  for (int64_t r = 0; r < n; ++r) {
    const int64_t base = r * classes;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t k = 0; k < classes; ++k) {
      const float v = static_cast<float>(load_at<T>(x, base + k));
      if (replaces_max(v, m)) m = v;
    }
    for (int64_t k = 0; k < classes; ++k) {
      sub[k] = fsub(static_cast<float>(load_at<T>(x, base + k)), m);
      e[k] = std::exp(sub[k]);
    }
    const float s = row_sum(e.data(), e.size());
    const float ls = std::log(s);
    float total = 0.0f;
    for (int64_t k = 0; k < classes; ++k) {
      const float label = static_cast<float>(load_at<T>(labels, base + k));
      store_at<T>(backprop, base + k, static_cast<typename T::Compute>(fsub(fdiv(e[k], s), label)));
      const float term = fmul(fsub(ls, sub[k]), label);
      total = k == 0 ? term : fadd(total, term);
    }
    store_at<T>(loss, r, static_cast<typename T::Compute>(total));
  }
}

bool softmax_dtype(aclDataType t) { return t == ACL_FLOAT || t == ACL_FLOAT16 || t == ACL_BF16; }

}  // namespace

// The one axis of attribute `axes` (default [-1]) of x, split; ACL_SUCCESS or the failure.
static aclError one_axis(const OpCall& c, const OpTensor& x, AxisSplit* split) {
  std::vector<int64_t> axes = c.has_attr("axes") ? c.attr_list("axes") : std::vector<int64_t>{-1};
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (axes.size() != 1)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute axes is %s, expected one axis", c.type.c_str(),
                shape_str(axes).c_str());
  int64_t axis = axes[0];
  if (rank == 0 || axis < -rank || axis >= rank)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute axes is %s, out of range for input 0 %s", c.type.c_str(),
                shape_str(axes).c_str(), shape_str(x.dims).c_str());
  if (axis < 0) axis += rank;
  *split = split_at(x.dims, static_cast<size_t>(axis));
  return ACL_SUCCESS;
}

// SoftmaxV2 (log = false) or LogSoftmaxV2 (log = true) along one axis: x (input 0) float32,
// float16 or bfloat16, y (output 0) of x's shape and dtype, or float32 for a float16 x with
// SoftmaxV2's half_to_float; `x_what` / `y_what` name them in errors.
aclError softmax_kernel(const OpCall& c, Run* run, bool log, const char* x_what, const char* y_what) {
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  const OpTensor &x = c.in[0], &y = c.out[0];
  if (aclError rc = expect_dtype_in(c, x_what, x, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  const bool to_float = !log && c.attr_int("half_to_float", 0) != 0 && x.dtype == ACL_FLOAT16;
  if (to_float) {
    if (y.dtype != ACL_FLOAT)
      return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                  "SoftmaxV2: output 0 (y) has dtype %s, expected float32 (half_to_float with a float16 x)",
                  dtype_name(y.dtype));
  } else if (aclError rc = expect_same_dtype(c, y_what, y, x_what, x)) {
    return rc;
  }
  if (aclError rc = expect_same_shape(c, y_what, y, x_what, x)) return rc;
  AxisSplit a;
  if (aclError rc = one_axis(c, x, &a)) return rc;
  if (to_float) {
    *run = [c, a] { softmax_along<F16, F32>(c, a, /*log=*/false); };
    return ACL_SUCCESS;
  }
  visit_listed<F32, F16, BF16>(x.dtype, [&](auto t) {
    using T = decltype(t);
    *run = [c, a, log] { softmax_along<T, T>(c, a, log); };
  });
  return ACL_SUCCESS;
}

// LogSoftmaxV2(logits; axes = [-1]) -> logsoftmax, one axis.
aclError k_log_softmax_v2(const OpCall& c, Run* run) {
  return softmax_kernel(c, run, /*log=*/true, "input 0 (logits)", "output 0 (logsoftmax)");
}

// SoftmaxV2(x; axes = [-1], half_to_float = false) -> y, one axis.
aclError k_softmax_v2(const OpCall& c, Run* run) {
  return softmax_kernel(c, run, /*log=*/false, "input 0 (x)", "output 0 (y)");
}

// SoftmaxCrossEntropyWithLogits(features [N, C], labels [N, C]) -> loss [N], backprop [N, C].
aclError k_softmax_cross_entropy(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 2, 2)) return rc;
  const OpTensor &x = c.in[0], &labels = c.in[1];
  if (!softmax_dtype(x.dtype)) return expect_dtype_in(c, "input 0 (features)", x, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16});
  if (aclError rc = expect_same_dtype(c, "input 1 (labels)", labels, "input 0 (features)", x)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (loss)", c.out[0], "input 0 (features)", x)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 1 (backprop)", c.out[1], "input 0 (features)", x)) return rc;
  if (x.dims.size() != 2)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "SoftmaxCrossEntropyWithLogits: input 0 (features) has shape %s, expected 2-D [batch, classes]",
                shape_str(x.dims).c_str());
  if (aclError rc = expect_same_shape(c, "input 1 (labels)", labels, "input 0 (features)", x)) return rc;
  const int64_t n = x.dims[0], classes = x.dims[1];
  if (classes == 0 && n > 0)
    return fail(ACL_ERROR_INVALID_PARAM,
                "SoftmaxCrossEntropyWithLogits: input 0 (features) has shape %s: no classes to normalise over",
                shape_str(x.dims).c_str());
  if (aclError rc = expect_output_shape(c, 0, "output 0 (loss)", {n}, "[batch] of features")) return rc;
  if (aclError rc = expect_output_shape(c, 1, "output 1 (backprop)", x.dims, "the shape of features")) return rc;
  visit_listed<F32, F16, BF16>(
      x.dtype, [&](auto t) { *run = [c, n, classes] { softmax_cross_entropy<decltype(t)>(c, n, classes); }; });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(softmax, {"SoftmaxV2", k_softmax_v2}, {"LogSoftmaxV2", k_log_softmax_v2},
           {"SoftmaxCrossEntropyWithLogits", k_softmax_cross_entropy})

}  // namespace aclsim
