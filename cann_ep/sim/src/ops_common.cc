// Validation and broadcasting helpers shared by the simulated kernels.
#include <cstring>

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

aclError expect_output_shape(const OpCall& c, size_t index, const char* what, const std::vector<int64_t>& want,
                             const char* why) {
  const std::vector<int64_t>& got = c.out[index].dims;
  if (got == want || (want.empty() && got == std::vector<int64_t>{1})) return ACL_SUCCESS;
  return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "%s: %s has shape %s, expected %s (%s)", c.type.c_str(), what,
              shape_str(got).c_str(), shape_str(want).c_str(), why);
}

aclError expect_dtype_in(const OpCall& c, const char* what, const OpTensor& t,
                         std::initializer_list<aclDataType> allowed) {
  std::string names;
  for (aclDataType a : allowed) {
    if (t.dtype == a) return ACL_SUCCESS;
    names += (names.empty() ? "" : ", ") + std::string(dtype_name(a));
  }
  return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "%s: %s has dtype %s, expected one of %s", c.type.c_str(), what,
              dtype_name(t.dtype), names.c_str());
}

bool dtype_listed(aclDataType t, std::initializer_list<aclDataType> listed) {
  for (aclDataType l : listed)
    if (t == l) return true;
  return false;
}

aclError expect_x_to_y(const OpCall& c, size_t n_in, std::initializer_list<aclDataType> allowed, size_t n_out) {
  if (aclError rc = expect_counts(c, n_in, n_out)) return rc;
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", c.in[0], allowed)) return rc;
  return expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0]);
}

aclError expect_same_binary(const OpCall& c, const char* const (&names)[3],
                            std::initializer_list<aclDataType> allowed) {
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  const OpTensor &a = c.in[0], &b = c.in[1], &y = c.out[0];
  if (aclError rc = expect_dtype_in(c, names[0], a, allowed)) return rc;
  if (aclError rc = expect_same_dtype(c, names[1], b, names[0], a)) return rc;
  if (aclError rc = expect_same_dtype(c, names[2], y, names[0], a)) return rc;
  if (aclError rc = expect_same_shape(c, names[1], b, names[0], a)) return rc;
  return expect_same_shape(c, names[2], y, names[0], a);
}

aclError no_output_window(const OpCall& c, const OpTensor& x, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                          const std::string& mode) {
  return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
              "%s: input 0 (x) %s gives no output window (kernel %lldx%lld, stride %lldx%lld, %s)", c.type.c_str(),
              shape_str(x.dims).c_str(), static_cast<long long>(kh), static_cast<long long>(kw),
              static_cast<long long>(sh), static_cast<long long>(sw), mode.c_str());
}

aclError expect_one_element(const OpCall& c, const char* what, const OpTensor& t) {
  if (t.numel == 1 && t.dims.size() <= 1) return ACL_SUCCESS;
  return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: %s has shape %s, expected one element ([1])", c.type.c_str(), what,
              shape_str(t.dims).c_str());
}

int64_t index_at(const OpTensor& t, int64_t i) {
  const unsigned char* p = static_cast<const unsigned char*>(t.data);
  if (t.dtype == ACL_INT32) {
    int32_t v;
    std::memcpy(&v, p + i * 4, 4);
    return v;
  }
  int64_t v;
  std::memcpy(&v, p + i * 8, 8);
  return v;
}

aclError read_index_list(const OpCall& c, size_t index, const char* what, bool need_const, std::vector<int64_t>* values,
                         bool* known) {
  const OpTensor& t = c.in[index];
  values->clear();
  *known = false;
  if (t.absent) return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: %s is required", c.type.c_str(), what);
  if (t.dtype != ACL_INT32 && t.dtype != ACL_INT64)
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "%s: %s has dtype %s, expected one of ACL_INT32, ACL_INT64",
                c.type.c_str(), what, dtype_name(t.dtype));
  if (t.dims.size() > 1)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: %s has shape %s, expected 1-D", c.type.c_str(), what,
                shape_str(t.dims).c_str());
  if (!t.is_const) {
    if (need_const)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                  "%s: %s must be a constant input (aclSetTensorConst): its values decide the output shape",
                  c.type.c_str(), what);
    return ACL_SUCCESS;
  }
  for (int64_t i = 0; i < t.numel; ++i) values->push_back(index_at(t, i));
  *known = true;
  return ACL_SUCCESS;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

std::string index_str(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size(), 0);
  for (size_t d = dims.size(); d-- > 0;) {
    if (dims[d] > 0) {
      idx[d] = flat % dims[d];
      flat /= dims[d];
    }
  }
  return shape_str(idx);
}

}  // namespace aclsim
