// Data-movement kernels: BroadcastToD (attr shape), Fill (dims, value), TransposeD (attr
// perm), Identity. They copy elements by size, so they work for every dtype.
#include <array>
#include <cstring>

#include "broadcast.h"
#include "ops.h"

namespace aclsim {

aclError k_broadcast_to(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  std::vector<int64_t> shape = c.has_attr("shape") ? c.attr_list("shape") : c.out[0].dims, bc;
  if (!broadcast_shape(c.in[0].dims, shape, &bc) || bc != shape)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 0 shape %s cannot be broadcast to %s", c.type.c_str(),
                shape_str(c.in[0].dims).c_str(), shape_str(shape).c_str());
  if (c.out[0].dims != shape)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "%s: output 0 has shape %s, expected %s (attribute shape)",
                c.type.c_str(), shape_str(c.out[0].dims).c_str(), shape_str(shape).c_str());
  size_t es = dtype_size(c.in[0].dtype);
  *run = [c, es] {
    const auto* x = static_cast<const unsigned char*>(c.in[0].data);
    auto* y = static_cast<unsigned char*>(c.out[0].data);
    std::array<std::vector<int64_t>, 1> s{broadcast_strides(c.in[0].dims, c.out[0].dims)};
    for_each_broadcast(c.out[0].dims, s,
                       [&](int64_t i, const std::array<int64_t, 1>& o) { std::memcpy(y + i * es, x + o[0] * es, es); });
  };
  return ACL_SUCCESS;
}

// Fill(dims: int64[rank], value: scalar) -> y of shape dims filled with value.
aclError k_fill(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 1 (value)", c.in[1])) return rc;
  if (c.in[1].numel != 1)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "Fill: input 1 (value) must hold one element, got shape %s",
                shape_str(c.in[1].dims).c_str());
  size_t es = dtype_size(c.out[0].dtype);
  *run = [c, es] {
    auto* y = static_cast<unsigned char*>(c.out[0].data);
    for (int64_t i = 0; i < c.out[0].numel; ++i) std::memcpy(y + i * es, c.in[1].data, es);
  };
  return ACL_SUCCESS;
}

aclError k_transpose(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  const std::vector<int64_t>& in = c.in[0].dims;
  std::vector<int64_t> perm = c.attr_list("perm");
  if (perm.empty())
    for (size_t i = in.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  std::vector<int64_t> out;
  std::vector<bool> seen(in.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(in.size()) || seen[p] || perm.size() != in.size())
      return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "TransposeD: attribute perm %s is not a permutation of rank %zu",
                  shape_str(perm).c_str(), in.size());
    seen[p] = true;
    out.push_back(in[p]);
  }
  if (out != c.out[0].dims)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "TransposeD: output 0 has shape %s, expected %s",
                shape_str(c.out[0].dims).c_str(), shape_str(out).c_str());
  size_t es = dtype_size(c.in[0].dtype);
  *run = [c, perm, es] {
    const std::vector<int64_t>& in = c.in[0].dims;
    std::vector<int64_t> in_strides(in.size(), 1), s(in.size());
    for (size_t d = in.size(); d-- > 1;) in_strides[d - 1] = in_strides[d] * in[d];
    for (size_t d = 0; d < perm.size(); ++d) s[d] = in_strides[perm[d]];
    const auto* x = static_cast<const unsigned char*>(c.in[0].data);
    auto* y = static_cast<unsigned char*>(c.out[0].data);
    std::array<std::vector<int64_t>, 1> strides{s};
    for_each_broadcast(c.out[0].dims, strides,
                       [&](int64_t i, const std::array<int64_t, 1>& o) { std::memcpy(y + i * es, x + o[0] * es, es); });
  };
  return ACL_SUCCESS;
}

aclError k_identity(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  *run = [c] {
    if (c.in[0].bytes > 0 && c.out[0].data != c.in[0].data) std::memmove(c.out[0].data, c.in[0].data, c.in[0].bytes);
  };
  return ACL_SUCCESS;
}

}  // namespace aclsim
