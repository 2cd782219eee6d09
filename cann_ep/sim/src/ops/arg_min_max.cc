// ArgMaxV2 / ArgMin(x, dimension; dtype = 3 (int32) or 9 (int64)) -> y: the index of the largest / smallest
// element along `dimension`, which y drops (hicann/ops-math math/arg_max_v2/op_graph/arg_max_v2_proto.h, math/
// arg_min/op_graph/arg_min_proto.h: dimension one int32/int64 element in [-rank, rank); several equal extremes give
// the first index). dtypes: op_host/arg_max_v2_def.cpp, op_host/arg_min_def.cpp (x float16, float32, bfloat16,
// int32, int64; y int32 or int64 as the dtype attribute). NaN as the kernels' golden (math/arg_max_v2/tests/assets/
// golden.py, math/arg_min/tests/assets/golden.py: np.argmax / np.argmin, bfloat16 through float32): the first NaN
// along the axis is the answer, for ArgMin too.
#include <cstdint>
#include <string>
#include <vector>

#include "axis_split.h"
#include "dtypes.h"
#include "op_call.h"

namespace aclsim {
namespace {

template <typename T, bool kMax>
void arg_run(const OpCall& c, int64_t axis) {
  using C = typename T::Compute;
  const auto [outer, depth, inner] = split_at(c.in[0].dims, static_cast<size_t>(axis));
  const bool out64 = c.out[0].dtype == ACL_INT64;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best_at = 0;
      C best = load_at<T>(c.in[0].data, o * depth * inner + i);
      for (int64_t k = 1; k < depth && best == best; ++k) {  // a NaN best stays
        const C v = load_at<T>(c.in[0].data, (o * depth + k) * inner + i);
        if (v != v || (kMax ? v > best : v < best)) {
          best = v;
          best_at = k;
        }
      }
      const int64_t at = o * inner + i;
      if (out64) {
        store_at<I64>(c.out[0].data, at, best_at);
      } else {
        store_at<I32>(c.out[0].data, at, static_cast<int32_t>(best_at));
      }
    }
  }
}

template <bool kMax>
aclError k_arg(const OpCall& c, Run* run) {
  const char* op = c.type.c_str();
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  if (aclError rc =
          expect_dtype_in(c, "input 0 (x)", c.in[0], {ACL_FLOAT16, ACL_FLOAT, ACL_BF16, ACL_INT32, ACL_INT64}))
    return rc;
  if (aclError rc = expect_dtype_in(c, "input 1 (dimension)", c.in[1], {ACL_INT32, ACL_INT64})) return rc;
  if (aclError rc = expect_one_element(c, "input 1 (dimension)", c.in[1])) return rc;
  const int64_t dtype = c.attr_int("dtype", 3);
  if (dtype != 3 && dtype != 9)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute dtype is %lld, expected 3 (int32) or 9 (int64)", op,
                static_cast<long long>(dtype));
  const aclDataType index_type = dtype == 9 ? ACL_INT64 : ACL_INT32;
  if (c.out[0].dtype != index_type)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "%s: output 0 (y) has dtype %s, expected %s (attribute dtype %lld)", op,
                dtype_name(c.out[0].dtype), dtype_name(index_type), static_cast<long long>(dtype));
  const int64_t rank = static_cast<int64_t>(c.in[0].dims.size());
  if (rank == 0) return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 0 (x) is a scalar, expected rank >= 1", op);
  // The dimension: a constant is checked now; one in device memory when the op runs (a device fault).
  auto check_axis = [rank](const OpCall& call, int64_t* axis, std::string* why) {
    const int64_t a = index_at(call.in[1], 0);
    if (a < -rank || a >= rank) {
      *why = "input 1 (dimension) is " + std::to_string(a) + ", expected in [-" + std::to_string(rank) + ", " +
             std::to_string(rank) + ") for x of shape " + shape_str(call.in[0].dims);
      return false;
    }
    *axis = a < 0 ? a + rank : a;
    std::vector<int64_t> y_dims = call.in[0].dims;
    y_dims.erase(y_dims.begin() + *axis);
    const bool scalar_as_one = y_dims.empty() && call.out[0].dims == std::vector<int64_t>{1};
    if (call.in[0].dims[static_cast<size_t>(*axis)] == 0) {
      *why = "input 0 (x) has shape " + shape_str(call.in[0].dims) + ": the reduced dimension is empty";
      return false;
    }
    if (call.out[0].dims != y_dims && !scalar_as_one) {
      *why = "output 0 (y) has shape " + shape_str(call.out[0].dims) + ", expected " + shape_str(y_dims) +
             " (x's shape without the dimension)";
      return false;
    }
    return true;
  };
  if (c.in[1].is_const) {
    int64_t axis = 0;
    std::string why;
    if (!check_axis(c, &axis, &why)) return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: %s", op, why.c_str());
  }
  visit_listed<F16, BF16, I32, I64, F32>(c.in[0].dtype, [&](auto t) {
    using T = decltype(t);
    *run = [c, check_axis] {
      int64_t axis = 0;
      std::string why;
      if (!check_axis(c, &axis, &why)) {
        device_fault("%s", why.c_str());
        return;
      }
      arg_run<T, kMax>(c, axis);
    };
  });
  return ACL_SUCCESS;
}

}  // namespace

ACLSIM_OPS(arg_min_max, {"ArgMaxV2", k_arg<true>}, {"ArgMin", k_arg<false>})

}  // namespace aclsim
