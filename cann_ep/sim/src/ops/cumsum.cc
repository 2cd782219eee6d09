// Cumsum(x, axis; exclusive = false, reverse = false) -> y, CANN's prefix sum along one axis
// (hicann/ops-math math/cumsum: README.md formula y_i = x_1 + ... + x_i; op_graph/cumsum_proto.h: axis int32 or
// int64, one element, in [-rank, rank); exclusive: y_i = x_1 + ... + x_(i-1), the first 0; reverse: from the end).
// dtypes: the AI Core rows of op_host/cumsum_def.cpp (int8, int32, int64, uint8, uint64, float16, float32,
// bfloat16). Order: sequential along the axis (op_kernel_aicpu/cumsum_aicpu.cpp's loop; the arch35 AI Core kernel,
// op_kernel/cumsum_apt.cpp, sums by a Sklansky tree, which may round differently), float16 / bfloat16 in float32
// (cumsum_apt.cpp's PromoteType) with one rounding per output, float32 in float32, integers wrapping.
#include <cstdint>
#include <cstring>
#include <string>

#include "axis_split.h"
#include "dtypes.h"
#include "op_call.h"
#include "wrapping_sum.h"

namespace aclsim {
namespace {

template <typename T>
void cumsum_run(const OpCall& c, int64_t axis, bool exclusive, bool reverse) {
  using C = typename T::Compute;
  using Acc = WrappingAccumulatorOf<C>;
  const auto [outer, depth, inner] = split_at(c.in[0].dims, static_cast<size_t>(axis));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      Acc acc = Acc(0);
      for (int64_t k = 0; k < depth; ++k) {
        const int64_t at = (o * depth + (reverse ? depth - 1 - k : k)) * inner + i;
        const Acc x = static_cast<Acc>(load_at<T>(c.in[0].data, at));
        if (!exclusive) acc = static_cast<Acc>(acc + x);
        store_at<T>(c.out[0].data, at, static_cast<C>(acc));
        if (exclusive) acc = static_cast<Acc>(acc + x);
      }
    }
  }
}

aclError k_cumsum(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  if (aclError rc =
          expect_dtype_in(c, "input 0 (x)", c.in[0],
                          {ACL_INT8, ACL_INT32, ACL_INT64, ACL_UINT8, ACL_UINT64, ACL_FLOAT16, ACL_FLOAT, ACL_BF16}))
    return rc;
  if (aclError rc = expect_dtype_in(c, "input 1 (axis)", c.in[1], {ACL_INT32, ACL_INT64})) return rc;
  if (aclError rc = expect_one_element(c, "input 1 (axis)", c.in[1])) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  const int64_t rank = static_cast<int64_t>(c.in[0].dims.size());
  const bool exclusive = c.attr_int("exclusive", 0) != 0, reverse = c.attr_int("reverse", 0) != 0;
  auto axis_of = [rank](int64_t a, int64_t* out) {
    const int64_t r = rank == 0 ? 1 : rank;  // a scalar x: axis 0 or -1
    if (a < -r || a >= r) return false;
    *out = a < 0 ? a + r : a;
    return true;
  };
  if (c.in[1].is_const) {
    int64_t axis = 0;
    if (!axis_of(index_at(c.in[1], 0), &axis))
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                  "%s: input 1 (axis) is %lld, expected in [-%lld, %lld) for x of shape %s", c.type.c_str(),
                  static_cast<long long>(index_at(c.in[1], 0)), static_cast<long long>(rank),
                  static_cast<long long>(rank), shape_str(c.in[0].dims).c_str());
  }
  visit_listed<I8, I32, I64, U8, U64, F16, BF16, F32>(c.in[0].dtype, [&](auto t) {
    using T = decltype(t);
    *run = [c, exclusive, reverse, axis_of] {
      int64_t axis = 0;
      if (!axis_of(index_at(c.in[1], 0), &axis)) {
        device_fault("input 1 (axis) is %lld, out of range for x of shape %s",
                     static_cast<long long>(index_at(c.in[1], 0)), shape_str(c.in[0].dims).c_str());
        return;
      }
      cumsum_run<T>(c, axis, exclusive, reverse);
    };
  });
  return ACL_SUCCESS;
}

}  // namespace

ACLSIM_OPS(cumsum, {"Cumsum", k_cumsum})

}  // namespace aclsim
