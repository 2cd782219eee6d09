// SoftmaxGrad (hicann/ops-nn activation/softmax_grad: README.md, op_graph/softmax_grad_proto.h,
// tests/assets/golden.py): (softmax, grad_softmax: one shape and dtype, float16 / bfloat16 / float32)
// -> grad_x = grad_softmax * softmax - sum(grad_softmax * softmax, axes) * softmax; attribute axes
// (ListInt, default {-1}; multi-axis reduction is in the proto, a single axis is simulated). README:
// Ascend 950, Atlas A2/A3, Atlas inference and training series (those two without bfloat16).
//
// Numerics, the golden's order (it computes float16/bfloat16 in float32 and casts once): per
// element t = fmul(dy, y); per row along the axis s = t_0 + t_1 + ... in increasing order (each sum
// rounded, numerics.h's NaN rule); grad_x = fsub(t, fmul(s, y)), rounded once to the dtype.
#include <string>
#include <vector>

#include "dtypes.h"
#include "internal.h"
#include "numerics.h"
#include "op_call.h"

namespace aclsim {

aclError k_softmax_grad(const OpCall& c, Run* run) {
  const char* op = c.type.c_str();
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  const OpTensor &y = c.in[0], &dy = c.in[1], &dx = c.out[0];
  if (aclError rc = expect_dtype_in(c, "input 0 (softmax)", y, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  const std::string family = soc_family();
  if (y.dtype == ACL_BF16 && (family == "ascend310p" || family == "ascend910"))
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "%s: bfloat16 is not supported on %s (README)", op, family.c_str());
  if (aclError rc = expect_same_dtype(c, "input 1 (grad_softmax)", dy, "input 0 (softmax)", y)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (grad_x)", dx, "input 0 (softmax)", y)) return rc;
  if (dy.dims != y.dims)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 1 (grad_softmax) has shape %s, softmax %s", op,
                shape_str(dy.dims).c_str(), shape_str(y.dims).c_str());
  if (aclError rc = expect_output_shape(c, 0, "output 0 (grad_x)", y.dims, "softmax's shape")) return rc;
  const std::vector<int64_t> axes = c.has_attr("axes") ? c.attr_list("axes") : std::vector<int64_t>{-1};
  const auto rank = static_cast<int64_t>(y.dims.size());
  if (axes.size() != 1)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute axes is %s: one axis is simulated", op,
                shape_str(axes).c_str());
  if (axes[0] < -rank || axes[0] >= rank)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute axes %s is out of range for softmax %s", op,
                shape_str(axes).c_str(), shape_str(y.dims).c_str());
  const int64_t a = axes[0] < 0 ? axes[0] + rank : axes[0];
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < a ? outer : d == a ? n : inner) *= y.dims[static_cast<size_t>(d)];
  visit_listed<F32, F16, BF16>(y.dtype, [&](auto tag) {
    using T = decltype(tag);
    *run = [c, outer, n, inner] {
      std::vector<float> t(static_cast<size_t>(n));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t base = o * n * inner + i;
          float s = 0.0f;
          for (int64_t k = 0; k < n; ++k) {
            const int64_t at = base + k * inner;
            const float v = fmul(static_cast<float>(load_at<T>(c.in[1].data, at)),
                                 static_cast<float>(load_at<T>(c.in[0].data, at)));
            t[static_cast<size_t>(k)] = v;
            s = k == 0 ? v : fadd(s, v);
          }
          for (int64_t k = 0; k < n; ++k) {
            const int64_t at = base + k * inner;
            const float u = fmul(s, static_cast<float>(load_at<T>(c.in[0].data, at)));
            store_at<T>(c.out[0].data, at, static_cast<typename T::Compute>(fsub(t[static_cast<size_t>(k)], u)));
          }
        }
    };
  });
  return ACL_SUCCESS;
}

ACLSIM_OPS(softmax_grad, {"SoftmaxGrad", k_softmax_grad})

}  // namespace aclsim
