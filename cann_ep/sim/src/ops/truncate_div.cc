// TruncateDiv(x1, x2) -> y = trunc(x1 / x2), NumPy broadcasting, x1, x2 and y of one dtype
// (hicann/ops-math@c4193324 math/truncate_div/op_graph/truncate_div_proto.h: float, float16,
// bfloat16, double, int8, uint8, int16, uint16, int32, int64; its kernel's mixed-dtype pairs are
// not simulated). Floats: the quotient in float32 (float16/bfloat16 load exactly, the result rounds
// once), in double for double, then truncated (the sign kept: trunc(-0.5) = -0.0). Integers: exact
// division toward zero (INT_MIN / -1 wraps). Division by zero: the README says "undefined"; the
// arch35 kernel (op_kernel/arch35/truncate_div_dag.h TruncIntPostCompute, TruncDivInt_SIMT) selects
// -1 for int8/int16/int32 and, for int64, 4294967295 when 0 <= x1 < INT64_MAX, else -1; for
// uint8/uint16 (a uint16 vector division) the source gives no value: the simulator writes all ones.
// Never a device fault.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "broadcast.h"
#include "dtypes.h"
#include "op_call.h"

namespace aclsim {
namespace {

template <typename C>
C truncate_divide(C a, C b) {
  if constexpr (std::is_floating_point<C>::value) {
    C q = a / b;
    if (q != q) q = nan_result(a, b);
    return std::trunc(q);
  } else {
    using U = std::make_unsigned_t<C>;
    if (b == 0) {
      if constexpr (std::is_same<C, int64_t>::value) {
        return (a >= 0 && a < std::numeric_limits<int64_t>::max()) ? static_cast<int64_t>(4294967295LL) : -1;
      } else {
        return static_cast<C>(static_cast<U>(~U{0}));  // -1 for signed types, all ones for unsigned
      }
    }
    if (std::is_signed<C>::value && b == static_cast<C>(-1))
      return static_cast<C>(static_cast<U>(0) - static_cast<U>(a));
    return static_cast<C>(a / b);
  }
}

bool listed(aclDataType t) {
  return dtype_listed(t, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE, ACL_INT8, ACL_UINT8, ACL_INT16, ACL_UINT16,
                          ACL_INT32, ACL_INT64});
}

}  // namespace

aclError k_truncate_div(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  if (aclError rc = expect_same_dtype(c, "input 1 (x2)", c.in[1], "input 0 (x1)", c.in[0])) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x1)", c.in[0])) return rc;
  if (!listed(c.in[0].dtype))
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "%s: input 0 (x1) has unsupported dtype %s", c.type.c_str(),
                dtype_name(c.in[0].dtype));
  std::vector<int64_t> shape;
  if (!broadcast_shape(c.in[0].dims, c.in[1].dims, &shape))
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input shapes %s and %s cannot be broadcast", c.type.c_str(),
                shape_str(c.in[0].dims).c_str(), shape_str(c.in[1].dims).c_str());
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", shape, "the broadcast of x1 and x2")) return rc;
  visit_dtype(c.in[0].dtype, [&](auto t) {
    using T = decltype(t);
    *run = [c] {
      std::array<std::vector<int64_t>, 2> s{broadcast_strides(c.in[0].dims, c.out[0].dims),
                                            broadcast_strides(c.in[1].dims, c.out[0].dims)};
      for_each_broadcast(c.out[0].dims, s, [&](int64_t i, const std::array<int64_t, 2>& o) {
        store_at<T>(
            c.out[0].data, i,
            truncate_divide<typename T::Compute>(load_at<T>(c.in[0].data, o[0]), load_at<T>(c.in[1].data, o[1])));
      });
    };
  });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(truncate_div, {"TruncateDiv", k_truncate_div})

}  // namespace aclsim
