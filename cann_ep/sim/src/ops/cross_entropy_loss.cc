// CrossEntropyLoss and CrossEntropyLossGrad: softmax cross-entropy with class indices, as the
// Atlas A2/A3 kernels of hicann/ops-nn@e5c3fa93 compute it (loss/cross_entropy_loss/op_kernel/
// cross_entropy_loss.h, loss/cross_entropy_loss_grad/op_kernel/cross_entropy_loss_grad_base.h and
// _weight_none.h / _weight_not_none.h; interfaces in op_host/*_def.cpp). All math in float32
// (float16/bfloat16 load exactly, results round once), rows in order:
//   CrossEntropyLoss(input [N, C], target int64 [N], weight float32 [C] optional)
//       -> loss ([1] for "mean"/"sum", [N] for "none"), log_prob [N, C], zloss, lse_for_zloss
//     m = max of the row (a NaN makes it NaN), s = row_sum of expf(x - m) (row_sum.h: blocks
//     combined pairwise, as the kernels' vector reductions),
//     log_prob = x - (m + logf(s))                                         (cross_entropy_loss.h:93, :270)
//     w_n = 0 if target == ignore_index (compared as int64, :81), else weight[t] or 1;
//     lp_n = 0 for an ignored row (selected, not multiplied: a NaN there stays out, :272), else log_prob[n, t]
//     lnSum = sum of lp_n * w_n; "sum": -lnSum; "mean": -lnSum / sum of w_n (all ignored: NaN, :385);
//     "none": -lp_n * w_n. zloss and lse_for_zloss are not written (return_zloss must be false).
//   CrossEntropyLossGrad(grad_loss, log_prob [N, C], target int64 [N], weight optional,
//       grad_zloss optional, lse_for_zloss optional) -> x_grad [N, C]
//     mask_n = 0 if float32(target) == float32(ignore_index) (base.h:209-219), else 1;
//     "mean": s_n = mask_n * (g / D), D = sum of mask_n (* weight[t]); all ignored: g / 0 = inf and
//             0 * inf = NaN in every element (the kernel's own result); "sum": s_n = mask_n * g;
//     "none": s_n = mask_n * g_n (grad_loss [N]); with weight, s_n *= weight[t_n];
//     x_grad = expf(log_prob) * s_n, then x_grad[n, t_n] -= s_n (skipped when t_n < 0 and t_n ==
//     ignore_index: weight_none.h:97).
// label_smoothing must be 0 (the A2/A3 grad kernel implements no other value: its doc "当前仅支持
// 输入0.0"). A target outside [0, C) that is not ignore_index is a device fault (the kernels read
// past the row). Ascend 950's kernels (arch35) differ (e.g. a negative ignore_index is not
// masked in the gradient); the simulator models the A2/A3 kernels on every SoC that has the ops.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "dtypes.h"
#include "op_call.h"
#include "row_sum.h"

namespace aclsim {
namespace {

bool ce_dtype(aclDataType t) { return t == ACL_FLOAT || t == ACL_FLOAT16 || t == ACL_BF16; }

enum class Reduction { kNone, kMean, kSum };

aclError read_reduction(const OpCall& c, Reduction* r) {
  const std::string s = c.attr_string("reduction", "mean");
  if (s == "mean") {
    *r = Reduction::kMean;
  } else if (s == "sum") {
    *r = Reduction::kSum;
  } else if (s == "none") {
    *r = Reduction::kNone;
  } else {
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "%s: attribute reduction is \"%s\", expected \"mean\", \"sum\" or \"none\"", c.type.c_str(), s.c_str());
  }
  return ACL_SUCCESS;
}

aclError check_label_smoothing(const OpCall& c) {
  const float ls = c.attr_float("label_smoothing", 0.0f);
  if (ls != 0.0f)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "%s: attribute label_smoothing is %g; the Atlas A2/A3 kernels implement only 0.0 (the simulator "
                "models those)",
                c.type.c_str(), static_cast<double>(ls));
  return ACL_SUCCESS;
}

// input [N, C] float, target int64 [N], weight float32 [C] or absent.
aclError check_rows(const OpCall& c, size_t x_at, const char* x_name, size_t target_at, size_t weight_at) {
  const OpTensor &x = c.in[x_at], &t = c.in[target_at];
  const std::string what = "input " + std::to_string(x_at) + " (" + x_name + ")";
  if (x.absent) return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: %s is required", c.type.c_str(), what.c_str());
  if (!ce_dtype(x.dtype)) return expect_dtype_in(c, what.c_str(), x, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16});
  if (x.dims.size() != 2)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: %s has shape %s, expected 2-D [N, C]", c.type.c_str(), what.c_str(),
                shape_str(x.dims).c_str());
  if (x.dims[0] > 0 && x.dims[1] == 0)
    return fail(ACL_ERROR_INVALID_PARAM, "%s: %s has shape %s: no classes", c.type.c_str(), what.c_str(),
                shape_str(x.dims).c_str());
  const std::string t_what = "input " + std::to_string(target_at) + " (target)";
  if (t.absent) return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: %s is required", c.type.c_str(), t_what.c_str());
  if (aclError rc = expect_dtype_in(c, t_what.c_str(), t, {ACL_INT64})) return rc;
  if (t.dims != std::vector<int64_t>{x.dims[0]})
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: %s has shape %s, expected [N] = [%lld] of %s %s", c.type.c_str(),
                t_what.c_str(), shape_str(t.dims).c_str(), static_cast<long long>(x.dims[0]), what.c_str(),
                shape_str(x.dims).c_str());
  if (weight_at < c.in.size() && !c.in[weight_at].absent) {
    const OpTensor& w = c.in[weight_at];
    const std::string w_what = "input " + std::to_string(weight_at) + " (weight)";
    if (aclError rc = expect_dtype_in(c, w_what.c_str(), w, {ACL_FLOAT})) return rc;
    if (w.dims != std::vector<int64_t>{x.dims[1]})
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: %s has shape %s, expected [C] = [%lld]", c.type.c_str(),
                  w_what.c_str(), shape_str(w.dims).c_str(), static_cast<long long>(x.dims[1]));
  }
  return ACL_SUCCESS;
}

bool target_in_range(const char* op, int64_t r, int64_t t, int64_t classes, int64_t ignore_index) {
  if (t == ignore_index || (t >= 0 && t < classes)) return true;
  device_fault("%s: input (target) holds %lld at [%lld], outside [0, %lld) and not ignore_index %lld", op,
               static_cast<long long>(t), static_cast<long long>(r), static_cast<long long>(classes),
               static_cast<long long>(ignore_index));
  return false;
}

template <typename T>
void forward(const OpCall& c, Reduction reduction, int64_t ignore_index) {
  const OpTensor &x = c.in[0], &target = c.in[1];
  const bool weighted = c.in.size() > 2 && !c.in[2].absent;
  const int64_t n = x.dims[0], classes = x.dims[1];
  for (int64_t r = 0; r < n; ++r)
    if (!target_in_range("CrossEntropyLoss", r, index_at(target, r), classes, ignore_index)) return;
  void *loss = c.out[0].data, *log_prob = c.out[1].data;
  float ln_sum = 0.0f, weight_sum = 0.0f;
  std::vector<float> e(static_cast<size_t>(classes));
  for (int64_t r = 0; r < n; ++r) {
    const int64_t base = r * classes;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t k = 0; k < classes; ++k) {
      const float v = static_cast<float>(load_at<T>(x.data, base + k));
      if (v > m || v != v) m = v;
    }
    for (int64_t k = 0; k < classes; ++k)
      e[static_cast<size_t>(k)] = std::exp(fsub(static_cast<float>(load_at<T>(x.data, base + k)), m));
    const float lse = fadd(m, std::log(row_sum(e.data(), e.size())));
    const int64_t t = index_at(target, r);
    const bool ignored = t == ignore_index;
    float lp_t = 0.0f;
    for (int64_t k = 0; k < classes; ++k) {
      const float lp = fsub(static_cast<float>(load_at<T>(x.data, base + k)), lse);
      store_at<T>(log_prob, base + k, static_cast<typename T::Compute>(lp));
      if (!ignored && k == t) lp_t = lp;  // the float32 value, before the output's rounding
    }
    const float w = ignored ? 0.0f : weighted ? load_at<F32>(c.in[2].data, t) : 1.0f;
    const float term = fmul(lp_t, w);
    if (reduction == Reduction::kNone) {
      store_at<T>(loss, r, static_cast<typename T::Compute>(-term));
    } else {
      ln_sum = fadd(ln_sum, term);
      weight_sum = fadd(weight_sum, w);
    }
  }
  if (reduction == Reduction::kSum) store_at<T>(loss, 0, static_cast<typename T::Compute>(-ln_sum));
  if (reduction == Reduction::kMean) store_at<T>(loss, 0, static_cast<typename T::Compute>(fdiv(-ln_sum, weight_sum)));
}

template <typename T>
void backward(const OpCall& c, Reduction reduction, int64_t ignore_index) {
  const OpTensor &g = c.in[0], &log_prob = c.in[1], &target = c.in[2];
  const bool weighted = c.in.size() > 3 && !c.in[3].absent;
  const int64_t n = log_prob.dims[0], classes = log_prob.dims[1];
  for (int64_t r = 0; r < n; ++r)
    if (!target_in_range("CrossEntropyLossGrad", r, index_at(target, r), classes, ignore_index)) return;
  const float ignore_f = static_cast<float>(ignore_index);
  std::vector<float> scale(static_cast<size_t>(n));
  float d = 0.0f;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t t = index_at(target, r);
    const float mask = static_cast<float>(t) == ignore_f ? 0.0f : 1.0f;
    const float w = weighted && mask != 0.0f ? load_at<F32>(c.in[3].data, t) : 1.0f;
    scale[static_cast<size_t>(r)] = weighted ? fmul(mask, w) : mask;
    d = fadd(d, scale[static_cast<size_t>(r)]);
  }
  const float g0 = reduction == Reduction::kNone ? 0.0f : static_cast<float>(load_at<T>(g.data, 0));
  const float mean_scale = fdiv(g0, d);
  void* x_grad = c.out[0].data;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t t = index_at(target, r);
    const float mw = scale[static_cast<size_t>(r)];
    const float s = reduction == Reduction::kMean  ? fmul(mw, mean_scale)
                    : reduction == Reduction::kSum ? fmul(mw, g0)
                                                   : fmul(mw, static_cast<float>(load_at<T>(g.data, r)));
    const int64_t base = r * classes;
    const bool skip = t < 0 && t == ignore_index;
    for (int64_t k = 0; k < classes; ++k) {
      float v = fmul(std::exp(static_cast<float>(load_at<T>(log_prob.data, base + k))), s);
      if (!skip && k == t) v = fsub(v, s);
      store_at<T>(x_grad, base + k, static_cast<typename T::Compute>(v));
    }
  }
}

// Between `min_in` and `max_in` inputs and `n_out` outputs, else an error saying `expected`.
aclError expect_io_counts(const OpCall& c, size_t min_in, size_t max_in, size_t n_out, const char* expected) {
  if (c.in.size() >= min_in && c.in.size() <= max_in && c.out.size() == n_out) return ACL_SUCCESS;
  return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: %zu inputs and %zu outputs, expected %s", c.type.c_str(), c.in.size(),
              c.out.size(), expected);
}

}  // namespace

// CrossEntropyLoss(input, target, weight?) -> loss, log_prob, zloss, lse_for_zloss.
aclError k_cross_entropy_loss(const OpCall& c, Run* run) {
  if (aclError rc =
          expect_io_counts(c, 2, 3, 4, "2-3 (input, target, weight) and 4 (loss, log_prob, zloss, lse_for_zloss)"))
    return rc;
  if (aclError rc = check_rows(c, 0, "input", 1, 2)) return rc;
  Reduction reduction;
  if (aclError rc = read_reduction(c, &reduction)) return rc;
  if (aclError rc = check_label_smoothing(c)) return rc;
  if (c.attr_int("return_zloss", 0) != 0 || c.attr_float("lse_square_scale_for_zloss", 0.0f) != 0.0f)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "CrossEntropyLoss: return_zloss / lse_square_scale_for_zloss are not simulated (the kernels "
                "leave zloss unwritten); pass false and 0.0");
  const OpTensor& x = c.in[0];
  const int64_t n = x.dims[0];
  if (aclError rc = expect_same_dtype(c, "output 0 (loss)", c.out[0], "input 0 (input)", x)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 1 (log_prob)", c.out[1], "input 0 (input)", x)) return rc;
  const std::vector<int64_t> loss_dims =
      reduction == Reduction::kNone ? std::vector<int64_t>{n} : std::vector<int64_t>{1};
  if (aclError rc = expect_output_shape(c, 0, "output 0 (loss)", loss_dims,
                                        reduction == Reduction::kNone ? "[N] for reduction none" : "[1]"))
    return rc;
  if (aclError rc = expect_output_shape(c, 1, "output 1 (log_prob)", x.dims, "the shape of input")) return rc;
  const int64_t ignore_index = c.attr_int("ignore_index", -100);
  visit_listed<F32, F16, BF16>(x.dtype, [&](auto t) {
    *run = [c, reduction, ignore_index] { forward<decltype(t)>(c, reduction, ignore_index); };
  });
  return ACL_SUCCESS;
}

// CrossEntropyLossGrad(grad_loss, log_prob, target, weight?, grad_zloss?, lse_for_zloss?) -> x_grad.
aclError k_cross_entropy_loss_grad(const OpCall& c, Run* run) {
  if (aclError rc = expect_io_counts(
          c, 3, 6, 1, "3-6 (grad_loss, log_prob, target, weight, grad_zloss, lse_for_zloss) and 1 (x_grad)"))
    return rc;
  if (aclError rc = check_rows(c, 1, "log_prob", 2, 3)) return rc;
  for (size_t i = 4; i < c.in.size(); ++i)
    if (!c.in[i].absent)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "CrossEntropyLossGrad: input %zu (%s) is not simulated; omit it", i,
                  i == 4 ? "grad_zloss" : "lse_for_zloss");
  Reduction reduction;
  if (aclError rc = read_reduction(c, &reduction)) return rc;
  if (aclError rc = check_label_smoothing(c)) return rc;
  const OpTensor &g = c.in[0], &lp = c.in[1];
  if (aclError rc = expect_same_dtype(c, "input 0 (grad_loss)", g, "input 1 (log_prob)", lp)) return rc;
  if (reduction == Reduction::kNone) {
    if (g.dims != std::vector<int64_t>{lp.dims[0]})
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                  "CrossEntropyLossGrad: input 0 (grad_loss) has shape %s, expected "
                  "[N] = [%lld] for reduction none",
                  shape_str(g.dims).c_str(), static_cast<long long>(lp.dims[0]));
  } else if (aclError rc = expect_one_element(c, "input 0 (grad_loss)", g)) {
    return rc;
  }
  if (aclError rc = expect_same_dtype(c, "output 0 (x_grad)", c.out[0], "input 1 (log_prob)", lp)) return rc;
  if (aclError rc = expect_output_shape(c, 0, "output 0 (x_grad)", lp.dims, "the shape of log_prob")) return rc;
  const int64_t ignore_index = c.attr_int("ignore_index", -100);
  visit_listed<F32, F16, BF16>(lp.dtype, [&](auto t) {
    *run = [c, reduction, ignore_index] { backward<decltype(t)>(c, reduction, ignore_index); };
  });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(cross_entropy_loss, {"CrossEntropyLoss", k_cross_entropy_loss},
           {"CrossEntropyLossGrad", k_cross_entropy_loss_grad})

}  // namespace aclsim
