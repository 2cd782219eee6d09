// ClipByValueV2(x, clip_value_min, clip_value_max) -> y (shape and dtype of x):
// y = min(max(x, clip_value_min), clip_value_max), in that order, as both kernels compute it
// (hicann/ops-math@c4193324 conversion/clip_by_value_v2/op_kernel/arch35/clip_by_value_v2_dag.h:
// Reg::Max with min, then Reg::Min with max; op_kernel_aicpu/clip_by_value_v2_aicpu.cpp:43
// std::min(std::max(x, mn), mx)), so min > max gives max (like np.clip), not the README's
// max(min(x, max), min). NaN: any NaN operand gives NaN (the AI CPU kernel's rule, lines 39-41;
// the AI Core source does not show Reg::Max/Min's NaN rule), here with the Maximum/Minimum
// semantics of min_max.h, so the NaN is the first of x, min, max that is one (the AI CPU kernel
// returns a quiet NaN). float16/bfloat16 compare exactly (the result is one of the inputs).
// dtypes: the AI Core def (op_host/clip_by_value_v2_def.cpp: float16, bfloat16, float, int32, int64;
// op_api/clip_by_value.cpp sends these to AI Core) broadcast min and max to x like NumPy
// (op_host/clip_by_value_v2_infershape.cpp: InferShape4Broadcast; here the broadcast must keep
// x's shape); the other real types of the AI CPU def (op_kernel_aicpu/clip_by_value_v2_aicpu_def.cpp:
// double, int8, int16, uint8, uint16, uint32, uint64) take min and max either both one element or
// both of x's shape (clip_by_value_v2_aicpu.cpp:238-250). Not simulated: complex and quantized types.
// min, max and y have x's dtype.
#include <array>

#include "broadcast.h"
#include "dtypes.h"
#include "min_max.h"
#include "op_call.h"

namespace aclsim {
namespace {

const char* const kBound[] = {"input 1 (clip_value_min)", "input 2 (clip_value_max)"};

aclError check_bounds(const OpCall& c) {
  const OpTensor &x = c.in[0], &lo = c.in[1], &hi = c.in[2];
  if (dtype_listed(x.dtype, {ACL_FLOAT16, ACL_BF16, ACL_FLOAT, ACL_INT32, ACL_INT64})) {
    for (int k = 0; k < 2; ++k) {
      std::vector<int64_t> shape;
      const OpTensor& b = c.in[1 + k];
      if (!broadcast_shape(x.dims, b.dims, &shape) || shape != x.dims)
        return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "ClipByValueV2: %s has shape %s, which does not broadcast to x %s",
                    kBound[k], shape_str(b.dims).c_str(), shape_str(x.dims).c_str());
    }
    return ACL_SUCCESS;
  }
  if ((lo.numel == 1 && hi.numel == 1) || (lo.dims == x.dims && hi.dims == x.dims)) return ACL_SUCCESS;
  return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
              "ClipByValueV2: clip_value_min %s and clip_value_max %s must both hold one element or both have "
              "the shape of x %s (dtype %s runs on AI CPU)",
              shape_str(lo.dims).c_str(), shape_str(hi.dims).c_str(), shape_str(x.dims).c_str(), dtype_name(x.dtype));
}

}  // namespace

aclError k_clip_by_value_v2(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 3, 1)) return rc;
  const OpTensor& x = c.in[0];
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", x,
                                    {ACL_FLOAT16, ACL_BF16, ACL_FLOAT, ACL_INT32, ACL_INT64, ACL_DOUBLE, ACL_INT8,
                                     ACL_INT16, ACL_UINT8, ACL_UINT16, ACL_UINT32, ACL_UINT64}))
    return rc;
  for (int k = 0; k < 2; ++k)
    if (aclError rc = expect_same_dtype(c, kBound[k], c.in[1 + k], "input 0 (x)", x)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x)", x)) return rc;
  if (aclError rc = check_bounds(c)) return rc;
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", x.dims, "the shape of x")) return rc;
  visit_listed<F16, BF16, F32, I32, I64, F64, I8, I16, U8, U16, U32, U64>(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    *run = [c] {
      const OpTensor &x = c.in[0], &lo = c.in[1], &hi = c.in[2];
      // A one-element bound of higher rank (AI CPU types) is read as a scalar.
      auto strides = [&x](const OpTensor& t) {
        return t.numel == 1 ? std::vector<int64_t>(x.dims.size(), 0) : broadcast_strides(t.dims, x.dims);
      };
      const std::array<std::vector<int64_t>, 3> s{row_major_strides(x.dims), strides(lo), strides(hi)};
      for_each_broadcast(x.dims, s, [&](int64_t i, const std::array<int64_t, 3>& o) {
        const auto v = max_nan(load_at<T>(x.data, o[0]), load_at<T>(lo.data, o[1]));
        store_at<T>(c.out[0].data, i, min_nan(v, load_at<T>(hi.data, o[2])));
      });
    };
  });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(clip, {"ClipByValueV2", k_clip_by_value_v2})

}  // namespace aclsim
