// ConcatV2 and SplitV: the copies that join tensors along one dim and cut one apart.
//
// ConcatV2(x_0, ..., x_{N-1}, concat_dim) -> y (hicann/ops-math@c4193324 conversion/concat_v2/
// op_graph/concat_v2_proto.h, REG_OP(ConcatV2): dynamic input x, concat_dim a 0-D int32/int64
// tensor in [-rank, rank), attr N "only descriptive"; x "a list of at least 2 tensors of the same
// type"; README: dims other than concat_dim equal, and Atlas training / inference series (ascend910,
// ascend310p) have no bfloat16).
// SplitV(x, size_splits, split_dim) -> y_0, ..., y_{num_split-1} (conversion/split_v/op_graph/
// split_v_proto.h, REG_OP(SplitV): size_splits int32/int64, each >= 1, num_split of them, summing to
// the split dim; split_dim int32/int64 in [-rank, rank); required attr num_split).
// Both copy elements by size (any dtype the simulator has). concat_dim, size_splits and split_dim
// decide the output shapes: they must be constant inputs here (aclSetTensorConst), as ort_ops sends
// them.
#include <cstring>
#include <string>

#include "op_call.h"

namespace aclsim {
namespace {

// The axis a const 0-D (or [1]) int input names, in [0, rank); ACL_SUCCESS or the failure.
aclError read_dim(const OpCall& c, size_t index, const char* what, size_t rank, size_t* axis) {
  std::vector<int64_t> v;
  bool known = false;
  if (aclError rc = read_index_list(c, index, what, /*need_const=*/true, &v, &known)) return rc;
  if (v.size() != 1)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: %s has %zu values, expected one (a scalar)", c.type.c_str(), what,
                v.size());
  const auto r = static_cast<int64_t>(rank);
  if (v[0] < -r || v[0] >= r)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: %s is %lld, out of range [%lld, %lld]", c.type.c_str(), what,
                static_cast<long long>(v[0]), static_cast<long long>(-r), static_cast<long long>(r - 1));
  *axis = static_cast<size_t>(v[0] < 0 ? v[0] + r : v[0]);
  return ACL_SUCCESS;
}

// Elements before `axis` (outer) and the bytes of one step along it (inner dims x element size).
void outer_inner(const std::vector<int64_t>& dims, size_t axis, size_t es, int64_t* outer, size_t* inner_bytes) {
  *outer = 1;
  *inner_bytes = es;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (d < axis) *outer *= dims[d];
    if (d > axis) *inner_bytes *= static_cast<size_t>(dims[d]);
  }
}

aclError no_bf16_here(const OpCall& c, aclDataType t) {
  const std::string family = soc_family();
  if (t == ACL_BF16 && (family == "ascend910" || family == "ascend310p"))
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "%s: bfloat16 is not supported on %s (conversion/%s/README.md)",
                c.type.c_str(), family.c_str(), c.type == "ConcatV2" ? "concat_v2" : "split_v");
  return ACL_SUCCESS;
}

}  // namespace

aclError k_concat_v2(const OpCall& c, Run* run) {
  if (c.out.size() != 1)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "ConcatV2: expected 1 output, got %zu", c.out.size());
  if (c.in.size() < 3)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "ConcatV2: %zu input tensor(s) x, expected at least 2 (and concat_dim)",
                c.in.empty() ? size_t{0} : c.in.size() - 1);
  const size_t n = c.in.size() - 1;
  const OpTensor& x0 = c.in[0];
  if (aclError rc = no_bf16_here(c, x0.dtype)) return rc;
  size_t axis = 0;
  if (aclError rc = read_dim(c, n, "input concat_dim", x0.dims.size(), &axis)) return rc;
  std::vector<int64_t> want = x0.dims;
  want[axis] = 0;
  for (size_t i = 0; i < n; ++i) {
    const OpTensor& x = c.in[i];
    const std::string what = "input x" + std::to_string(i);
    if (aclError rc = expect_same_dtype(c, what.c_str(), x, "input x0", x0)) return rc;
    bool fits = x.dims.size() == x0.dims.size();
    for (size_t d = 0; fits && d < x.dims.size(); ++d) fits = d == axis || x.dims[d] == x0.dims[d];
    if (!fits)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "ConcatV2: %s has shape %s, x0 %s: they differ outside dim %zu",
                  what.c_str(), shape_str(x.dims).c_str(), shape_str(x0.dims).c_str(), axis);
    want[axis] += x.dims[axis];
  }
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input x0", x0)) return rc;
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", want, "the inputs joined along concat_dim")) return rc;
  const size_t es = dtype_size(x0.dtype);
  *run = [c, n, axis, es] {
    int64_t outer = 0;
    size_t step = 0;
    outer_inner(c.out[0].dims, axis, es, &outer, &step);
    auto* y = static_cast<unsigned char*>(c.out[0].data);
    const size_t row = step * static_cast<size_t>(c.out[0].dims[axis]);
    size_t at = 0;  // bytes of each output row written so far
    for (size_t i = 0; i < n; ++i) {
      const size_t part = step * static_cast<size_t>(c.in[i].dims[axis]);
      const auto* x = static_cast<const unsigned char*>(c.in[i].data);
      for (int64_t o = 0; o < outer && part > 0; ++o) std::memcpy(y + o * row + at, x + o * part, part);
      at += part;
    }
  };
  return ACL_SUCCESS;
}

aclError k_split_v(const OpCall& c, Run* run) {
  if (c.in.size() != 3) return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "SplitV: expected 3 inputs, got %zu", c.in.size());
  if (!c.has_attr("num_split"))
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "SplitV: the required attribute num_split is not set");
  const OpTensor& x = c.in[0];
  if (aclError rc = no_bf16_here(c, x.dtype)) return rc;
  const int64_t num_split = c.attr_int("num_split", 0);
  if (num_split < 1 || static_cast<size_t>(num_split) != c.out.size())
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "SplitV: attribute num_split is %lld, but there are %zu outputs",
                static_cast<long long>(num_split), c.out.size());
  std::vector<int64_t> sizes;
  bool known = false;
  if (aclError rc = read_index_list(c, 1, "input 1 (size_splits)", /*need_const=*/true, &sizes, &known)) return rc;
  size_t axis = 0;
  if (aclError rc = read_dim(c, 2, "input 2 (split_dim)", x.dims.size(), &axis)) return rc;
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 1)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "SplitV: input 1 (size_splits) %s: each size must be >= 1",
                  shape_str(sizes).c_str());
    total += s;
  }
  if (static_cast<int64_t>(sizes.size()) != num_split || total != x.dims[axis])
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "SplitV: input 1 (size_splits) %s must hold num_split = %lld sizes summing to dim %zu of x %s",
                shape_str(sizes).c_str(), static_cast<long long>(num_split), axis, shape_str(x.dims).c_str());
  for (size_t k = 0; k < c.out.size(); ++k) {
    std::vector<int64_t> want = x.dims;
    want[axis] = sizes[k];
    const std::string what = "output " + std::to_string(k);
    if (aclError rc = expect_same_dtype(c, what.c_str(), c.out[k], "input 0 (x)", x)) return rc;
    if (aclError rc = expect_output_shape(c, k, what.c_str(), want, "x's piece along split_dim")) return rc;
  }
  const size_t es = dtype_size(x.dtype);
  *run = [c, axis, es] {
    int64_t outer = 0;
    size_t step = 0;
    outer_inner(c.in[0].dims, axis, es, &outer, &step);
    const auto* x = static_cast<const unsigned char*>(c.in[0].data);
    const size_t row = step * static_cast<size_t>(c.in[0].dims[axis]);
    size_t at = 0;
    for (const OpTensor& y : c.out) {
      const size_t part = step * static_cast<size_t>(y.dims[axis]);
      auto* dst = static_cast<unsigned char*>(y.data);
      for (int64_t o = 0; o < outer && part > 0; ++o) std::memcpy(dst + o * part, x + o * row + at, part);
      at += part;
    }
  };
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(concat_split, {"ConcatV2", k_concat_v2}, {"SplitV", k_split_v})

}  // namespace aclsim
