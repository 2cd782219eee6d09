// Validation and broadcasting helpers shared by the simulated kernels.
#include "op_call.h"

namespace aclsim {

aclError expect_counts(const OpCall& c, size_t n_in, size_t n_out) {
  if (c.in.size() != n_in)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: expected %zu input(s), got %zu", c.type.c_str(), n_in, c.in.size());
  if (c.out.size() != n_out)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "%s: expected %zu output(s), got %zu", c.type.c_str(), n_out,
                c.out.size());
  return ACL_SUCCESS;
}

aclError expect_same_dtype(const OpCall& c, const char* what_a, const OpTensor& a, const char* what_b,
                           const OpTensor& b) {
  if (a.dtype == b.dtype) return ACL_SUCCESS;
  bool out = std::string(what_a).rfind("output", 0) == 0;
  return fail(out ? ACL_ERROR_OP_OUTPUT_NOT_MATCH : ACL_ERROR_OP_INPUT_NOT_MATCH,
              "%s: %s has dtype %s, expected %s (the dtype of %s)", c.type.c_str(), what_a, dtype_name(a.dtype),
              dtype_name(b.dtype), what_b);
}

aclError expect_same_shape(const OpCall& c, const char* what_a, const OpTensor& a, const char* what_b,
                           const OpTensor& b) {
  if (a.dims == b.dims) return ACL_SUCCESS;
  bool out = std::string(what_a).rfind("output", 0) == 0;
  return fail(out ? ACL_ERROR_OP_OUTPUT_NOT_MATCH : ACL_ERROR_OP_INPUT_NOT_MATCH,
              "%s: %s has shape %s, expected %s (the shape of %s)", c.type.c_str(), what_a, shape_str(a.dims).c_str(),
              shape_str(b.dims).c_str(), what_b);
}

bool broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out) {
  size_t r = std::max(a.size(), b.size());
  out->assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) return false;
    (*out)[r - 1 - i] = da == 1 ? db : da;
  }
  return true;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  std::vector<int64_t> s(out.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < in.size(); ++i) {
    size_t din = in.size() - 1 - i, dout = out.size() - 1 - i;
    s[dout] = in[din] == 1 ? 0 : stride;
    stride *= in[din];
  }
  return s;
}

}  // namespace aclsim
