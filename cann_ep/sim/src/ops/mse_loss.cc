// MseLoss and MseLossGrad: the mean squared error and its gradient, with the semantics of
// hicann/ops-nn loss/mse_loss and loss/mse_loss_grad (READMEs; tests/assets/golden.py of mse_loss,
// which holds both goldens; op_host/arch35/mse_loss_tiling_arch35.cpp and
// mse_loss_grad_tiling_arch35.cpp for the checks; op_kernel/arch35/mse_loss_grad_dag.h for the
// gradient's order). Float32 math (float16/bfloat16 load exactly), one rounding to the dtype:
//   MseLoss(predict, label; reduction) -> y
//     d = predict - label; "none": y = d * d (predict's shape);
//     "sum": y = the float32 sum of d * d in element order (ReduceSum's order here);
//     "mean": y = that sum * float32(1 / N)                              (the golden's sum * cof)
//   MseLossGrad(predict, label, dout; reduction) -> y
//     cof = float32(2 / (double)N) for "mean" (N = predict's element count), else 2;
//     y = ((predict - label) * cof) * dout                               (the dag: Sub, Muls, Mul)
//     dout of one element (the scalar dag) or of predict's shape (the other broadcasts the
//     tiling allows are not modelled).
// One dtype for every tensor (float32, float16, bfloat16: both tilings refuse mixed dtypes);
// predict and label of one shape (MseLoss's tiling refuses others; the gradient's broadcasting is
// not modelled); reduction "none", "sum" or "mean", else ACL_ERROR_OP_ATTR_NOT_MATCH; MseLossGrad
// "mean" refuses an empty predict (its tiling: "cannot be an empty tensor").
#include <string>

#include "dtypes.h"
#include "numerics.h"
#include "op_call.h"

namespace aclsim {
namespace {

enum class Reduction { kNone, kSum, kMean };

aclError read_reduction(const OpCall& c, Reduction* r) {
  const std::string s = c.attr_string("reduction", "mean");
  if (s == "none" || s == "sum" || s == "mean") {
    *r = s == "none" ? Reduction::kNone : s == "sum" ? Reduction::kSum : Reduction::kMean;
    return ACL_SUCCESS;
  }
  return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute reduction is \"%s\", expected \"none\", \"sum\" or \"mean\"",
              c.type.c_str(), s.c_str());
}

// predict (input 0) and label (input 1): one float dtype, one shape.
aclError check_pair(const OpCall& c) {
  if (aclError rc = expect_dtype_in(c, "input 0 (predict)", c.in[0], {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  if (aclError rc = expect_same_dtype(c, "input 0 (predict)", c.in[0], "input 1 (label)", c.in[1])) return rc;
  return expect_same_shape(c, "input 0 (predict)", c.in[0], "input 1 (label)", c.in[1]);
}

template <typename T>
void mse_loss(const OpCall& c, Reduction r) {
  const OpTensor& p = c.in[0];
  float total = 0.0f;
  for (int64_t i = 0; i < p.numel; ++i) {
    const float d = fsub(static_cast<float>(load_at<T>(p.data, i)), static_cast<float>(load_at<T>(c.in[1].data, i)));
    const float sq = fmul(d, d);
    if (r == Reduction::kNone) {
      store_at<T>(c.out[0].data, i, static_cast<typename T::Compute>(sq));
    } else {
      total = i == 0 ? sq : fadd(total, sq);
    }
  }
  if (r == Reduction::kNone) return;
  if (r == Reduction::kMean) total = fmul(total, static_cast<float>(1.0 / static_cast<double>(p.numel)));
  store_at<T>(c.out[0].data, 0, static_cast<typename T::Compute>(total));
}

template <typename T>
void mse_loss_grad(const OpCall& c, float cof) {
  const bool one = c.in[2].numel == 1;
  for (int64_t i = 0; i < c.out[0].numel; ++i) {
    const float d =
        fsub(static_cast<float>(load_at<T>(c.in[0].data, i)), static_cast<float>(load_at<T>(c.in[1].data, i)));
    const float g = static_cast<float>(load_at<T>(c.in[2].data, one ? 0 : i));
    store_at<T>(c.out[0].data, i, static_cast<typename T::Compute>(fmul(fmul(d, cof), g)));
  }
}

}  // namespace

aclError k_mse_loss(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  if (aclError rc = check_pair(c)) return rc;
  Reduction r;
  if (aclError rc = read_reduction(c, &r)) return rc;
  if (aclError rc = expect_same_dtype(c, "input 0 (predict)", c.in[0], "output 0 (y)", c.out[0])) return rc;
  if (r == Reduction::kNone) {
    if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", c.in[0].dims, "predict's shape (reduction \"none\")"))
      return rc;
  } else if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", {}, "a scalar (reduction \"sum\"/\"mean\")")) {
    return rc;
  }
  visit_listed<F32, F16, BF16>(c.in[0].dtype, [&](auto t) { *run = [c, r] { mse_loss<decltype(t)>(c, r); }; });
  return ACL_SUCCESS;
}

aclError k_mse_loss_grad(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 3, 1)) return rc;
  if (aclError rc = check_pair(c)) return rc;
  if (aclError rc = expect_same_dtype(c, "input 0 (predict)", c.in[0], "input 2 (dout)", c.in[2])) return rc;
  if (aclError rc = expect_same_dtype(c, "input 0 (predict)", c.in[0], "output 0 (y)", c.out[0])) return rc;
  if (c.in[2].numel != 1 && c.in[2].dims != c.in[0].dims) {
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "%s: input 2 (dout) has shape %s; the simulator models one element or "
                "predict's shape %s",
                c.type.c_str(), shape_str(c.in[2].dims).c_str(), shape_str(c.in[0].dims).c_str());
  }
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", c.in[0].dims, "predict's shape")) return rc;
  Reduction r;
  if (aclError rc = read_reduction(c, &r)) return rc;
  if (r == Reduction::kMean && c.in[0].numel == 0) {
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "%s: input 0 (predict) cannot be an empty tensor when reduction is \"mean\"", c.type.c_str());
  }
  const float cof = r == Reduction::kMean ? static_cast<float>(2.0 / static_cast<double>(c.in[0].numel)) : 2.0f;
  visit_listed<F32, F16, BF16>(c.in[0].dtype, [&](auto t) { *run = [c, cof] { mse_loss_grad<decltype(t)>(c, cof); }; });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(mse_loss, {"MseLoss", k_mse_loss}, {"MseLossGrad", k_mse_loss_grad})

}  // namespace aclsim
