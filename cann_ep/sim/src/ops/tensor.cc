// Data-movement kernels: BroadcastToD (attr shape), Expand (shape input), Fill (dims, value), TransposeD (attr
// perm), Transpose (perm input), Slice (offsets, size inputs), Tile (multiples input), Identity. They copy elements by
// size, so they work for every dtype.
#include <array>
#include <cstring>

#include "broadcast.h"
#include "op_call.h"

namespace aclsim {
namespace {

// y = input 0 broadcast to output 0's shape, elements of `es` bytes copied.
void broadcast_copy(const OpCall& c, size_t es) {
  const auto* x = static_cast<const unsigned char*>(c.in[0].data);
  auto* y = static_cast<unsigned char*>(c.out[0].data);
  std::array<std::vector<int64_t>, 1> s{broadcast_strides(c.in[0].dims, c.out[0].dims)};
  for_each_broadcast(c.out[0].dims, s,
                     [&](int64_t i, const std::array<int64_t, 1>& o) { std::memcpy(y + i * es, x + o[0] * es, es); });
}

}  // namespace

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
  *run = [c, es] { broadcast_copy(c, es); };
  return ACL_SUCCESS;
}

// Expand(x, shape) -> y = x broadcast with `shape` like ONNX's Expand (hicann/ops-math@27338be9
// math/expand/op_graph/expand_proto.h: "compatible with the ONNX operator Expand"; x and y
// float16/float/int32/int64/int8/uint8/bool/bfloat16, shape 1-D ("the dim numbers of shape cannot be
// more than one"), "the inputs cannot be empty tensor"; README: y at most 8-D). shape int32/int64
// here (the README also lists int16, which nothing launches). A shape in device memory is read
// when the op runs; one that does not give y's shape then is a device fault.
aclError k_expand(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  const OpTensor &x = c.in[0], &y = c.out[0];
  if (aclError rc = expect_dtype_in(
          c, "input 0 (x)", x, {ACL_FLOAT16, ACL_FLOAT, ACL_INT32, ACL_INT64, ACL_INT8, ACL_UINT8, ACL_BOOL, ACL_BF16}))
    return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  std::vector<int64_t> shape, want;
  bool known = false;
  if (aclError rc = read_index_list(c, 1, "input 1 (shape)", /*need_const=*/false, &shape, &known)) return rc;
  if (x.numel == 0 || c.in[1].numel == 0)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "Expand: input %s has no element (the inputs cannot be empty tensors)",
                x.numel == 0 ? "0 (x)" : "1 (shape)");
  if (y.dims.size() > 8)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "Expand: output 0 (y) has shape %s, at most 8 dims",
                shape_str(y.dims).c_str());
  if (known) {
    if (!broadcast_shape(x.dims, shape, &want))
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                  "Expand: input 0 (x) shape %s does not broadcast with input 1 (shape) %s", shape_str(x.dims).c_str(),
                  shape_str(shape).c_str());
    if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", want, "x broadcast with shape")) return rc;
  } else if (!broadcast_shape(x.dims, y.dims, &want) || want != y.dims) {
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "Expand: output 0 (y) shape %s is not a broadcast of input 0 (x) %s",
                shape_str(y.dims).c_str(), shape_str(x.dims).c_str());
  }
  const size_t es = dtype_size(x.dtype);
  *run = [c, es, known] {
    if (!known) {
      std::vector<int64_t> values, got;
      for (int64_t i = 0; i < c.in[1].numel; ++i) values.push_back(index_at(c.in[1], i));
      if (!broadcast_shape(c.in[0].dims, values, &got) || got != c.out[0].dims)
        return device_fault("Expand: input 1 (shape) %s does not broadcast input 0 (x) %s to output 0 (y) %s",
                            shape_str(values).c_str(), shape_str(c.in[0].dims).c_str(),
                            shape_str(c.out[0].dims).c_str());
    }
    broadcast_copy(c, es);
  };
  return ACL_SUCCESS;
}

// Fill(dims: int32/int64[rank], value: scalar) -> y of shape dims filled with value (GE op_proto
// fill.h, REG_OP(Fill): dims "a 1D tensor of types int32 or int64", value "a 0D scalar" of
// BasicType, y "the same type as value"; no bool). Const dims must equal y's shape.
aclError k_fill(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  if (aclError rc = expect_dtype_in(c, "input 1 (value)", c.in[1],
                                    {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE, ACL_INT8, ACL_INT16, ACL_INT32,
                                     ACL_INT64, ACL_UINT8, ACL_UINT16, ACL_UINT32, ACL_UINT64}))
    return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 1 (value)", c.in[1])) return rc;
  if (c.in[1].numel != 1)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "Fill: input 1 (value) must hold one element, got shape %s",
                shape_str(c.in[1].dims).c_str());
  std::vector<int64_t> dims;
  bool known = false;
  if (aclError rc = read_index_list(c, 0, "input 0 (dims)", /*need_const=*/false, &dims, &known)) return rc;
  if (known && dims != c.out[0].dims)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "Fill: output 0 (y) has shape %s, input 0 (dims) is %s",
                shape_str(c.out[0].dims).c_str(), shape_str(dims).c_str());
  size_t es = dtype_size(c.out[0].dtype);
  *run = [c, es] {
    auto* y = static_cast<unsigned char*>(c.out[0].data);
    for (int64_t i = 0; i < c.out[0].numel; ++i) std::memcpy(y + i * es, c.in[1].data, es);
  };
  return ACL_SUCCESS;
}

namespace {

// y = x with its dims permuted by `perm` (y.dims[i] = x.dims[perm[i]]); `what` names where perm
// came from in messages.
aclError transpose_by(const OpCall& c, std::vector<int64_t> perm, const char* what, Run* run) {
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  const std::vector<int64_t>& in = c.in[0].dims;
  std::vector<int64_t> out;
  std::vector<bool> seen(in.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(in.size()) || seen[p] || perm.size() != in.size())
      return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: %s %s is not a permutation of rank %zu", c.type.c_str(), what,
                  shape_str(perm).c_str(), in.size());
    seen[p] = true;
    out.push_back(in[p]);
  }
  if (perm.size() != in.size())  // only reachable with an empty perm of a non-scalar
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: %s %s is not a permutation of rank %zu", c.type.c_str(), what,
                shape_str(perm).c_str(), in.size());
  if (out != c.out[0].dims)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "%s: output 0 has shape %s, expected %s", c.type.c_str(),
                shape_str(c.out[0].dims).c_str(), shape_str(out).c_str());
  size_t es = dtype_size(c.in[0].dtype);
  *run = [c, perm, es] {
    const std::vector<int64_t>& in = c.in[0].dims;
    std::vector<int64_t> in_strides = row_major_strides(in), s(in.size());
    for (size_t d = 0; d < perm.size(); ++d) s[d] = in_strides[perm[d]];
    const auto* x = static_cast<const unsigned char*>(c.in[0].data);
    auto* y = static_cast<unsigned char*>(c.out[0].data);
    std::array<std::vector<int64_t>, 1> strides{s};
    for_each_broadcast(c.out[0].dims, strides,
                       [&](int64_t i, const std::array<int64_t, 1>& o) { std::memcpy(y + i * es, x + o[0] * es, es); });
  };
  return ACL_SUCCESS;
}

}  // namespace

// TransposeD(x; attr perm, default: reversed dims) -> y.
aclError k_transpose(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  std::vector<int64_t> perm = c.attr_list("perm");
  if (perm.empty())
    for (size_t i = c.in[0].dims.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  return transpose_by(c, perm, "attribute perm", run);
}

// Transpose(x, perm: const int32/int64 1-D) -> y (hicann/ops-math@c4193324
// conversion/transpose/op_graph/transpose_proto.h:41).
aclError k_transpose_v(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  std::vector<int64_t> perm;
  bool known;
  if (aclError rc = read_index_list(c, 1, "input 1 (perm)", true, &perm, &known)) return rc;
  return transpose_by(c, perm, "input 1 (perm)", run);
}

// Slice(x, offsets, size: const int32/int64 1-D, one entry per dim; size -1 = to the end) -> y =
// x[offsets : offsets + size] (TF Slice; mindspore-ai/graphengine@cd75e149
// 910/third_party/fwkacllib/inc/ops/selection_ops.h:924).
aclError k_slice(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 3, 1)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  std::vector<int64_t> offsets, size;
  bool known;
  if (aclError rc = read_index_list(c, 1, "input 1 (offsets)", true, &offsets, &known)) return rc;
  if (aclError rc = read_index_list(c, 2, "input 2 (size)", true, &size, &known)) return rc;
  const std::vector<int64_t>& in = c.in[0].dims;
  if (offsets.size() != in.size() || size.size() != in.size())
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "Slice: input 1 (offsets) %s and input 2 (size) %s need one entry per dim of x %s",
                shape_str(offsets).c_str(), shape_str(size).c_str(), shape_str(in).c_str());
  std::vector<int64_t> out(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    if (offsets[d] < 0 || offsets[d] > in[d])
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                  "Slice: input 1 (offsets) %s: offset %lld of dim %zu is outside [0, %lld]",
                  shape_str(offsets).c_str(), static_cast<long long>(offsets[d]), d, static_cast<long long>(in[d]));
    out[d] = size[d] == -1 ? in[d] - offsets[d] : size[d];
    if (out[d] < 0 || out[d] > in[d] - offsets[d])
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                  "Slice: input 2 (size) %s: size %lld of dim %zu does not fit x %s from offset %lld (-1 = to the end)",
                  shape_str(size).c_str(), static_cast<long long>(size[d]), d, shape_str(in).c_str(),
                  static_cast<long long>(offsets[d]));
  }
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", out, "the size input, -1 resolved")) return rc;
  const size_t es = dtype_size(c.in[0].dtype);
  *run = [c, offsets, out, es] {
    const std::vector<int64_t> strides = row_major_strides(c.in[0].dims);
    int64_t base = 0;
    for (size_t d = 0; d < offsets.size(); ++d) base += offsets[d] * strides[d];
    const auto* x = static_cast<const unsigned char*>(c.in[0].data) + base * static_cast<int64_t>(es);
    auto* y = static_cast<unsigned char*>(c.out[0].data);
    std::array<std::vector<int64_t>, 1> s{strides};
    for_each_broadcast(
        out, s, [&](int64_t i, const std::array<int64_t, 1>& o) { std::memmove(y + i * es, x + o[0] * es, es); });
  };
  return ACL_SUCCESS;
}

// StridedSlice(x, begin, end, strides: const int32/int64 1-D; attrs begin_mask, end_mask,
// ellipsis_mask, new_axis_mask, shrink_axis_mask, default 0) -> y (TF StridedSlice;
// hicann/ops-math@c4193324 conversion/strided_slice/op_graph/strided_slice_proto.h, README: every
// product line). Per dim i of x (n = dim i; stride s != 0): a begin / end whose mask bit is set
// becomes the whole interval's (s > 0: 0 / n; s < 0: n - 1 / -1); otherwise a negative value gets
// + n and is clamped to [0, n] (s > 0) or [-1, n - 1] (s < 0); the dim takes elements begin,
// begin + s, ... while before end: ceil((end - begin) / s) of them, 0 if the interval is empty or
// against the stride (op_host/strided_slice_util.h BuildProcessingData canonical,
// BuildProcessingShape). begin/end/strides give every dim here; the ellipsis, new-axis and
// shrink masks are not simulated (a non-zero one fails the call).
aclError k_strided_slice(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 4, 1)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", c.out[0], "input 0 (x)", c.in[0])) return rc;
  for (const char* mask : {"ellipsis_mask", "new_axis_mask", "shrink_axis_mask"})
    if (c.attr_int(mask, 0) != 0)
      return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "StridedSlice: attribute %s %lld is not simulated (0 only)", mask,
                  static_cast<long long>(c.attr_int(mask, 0)));
  const int64_t begin_mask = c.attr_int("begin_mask", 0), end_mask = c.attr_int("end_mask", 0);
  std::vector<int64_t> begin, end, strides;
  bool known;
  if (aclError rc = read_index_list(c, 1, "input 1 (begin)", true, &begin, &known)) return rc;
  if (aclError rc = read_index_list(c, 2, "input 2 (end)", true, &end, &known)) return rc;
  if (aclError rc = read_index_list(c, 3, "input 3 (strides)", true, &strides, &known)) return rc;
  const std::vector<int64_t>& in = c.in[0].dims;
  if (begin.size() != in.size() || end.size() != in.size() || strides.size() != in.size())
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "StridedSlice: begin %s, end %s and strides %s need one entry per dim of x %s (the simulator "
                "implements full specifications only)",
                shape_str(begin).c_str(), shape_str(end).c_str(), shape_str(strides).c_str(), shape_str(in).c_str());
  std::vector<int64_t> first(in.size()), out(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t n = in[d], st = strides[d];
    if (st == 0) return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "StridedSlice: strides[%zu] must be non-zero", d);
    const int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? n : n - 1;
    auto canonical = [&](int64_t v, bool masked, bool is_begin) {
      if (masked) return st > 0 ? (is_begin ? 0 : n) : (is_begin ? n - 1 : -1);
      if (v < 0) v += n;
      return std::min(std::max(v, lo), hi);
    };
    const int64_t b = canonical(begin[d], (begin_mask >> d) & 1, true);
    const int64_t e = canonical(end[d], (end_mask >> d) & 1, false);
    const int64_t length = e - b;
    first[d] = b;
    out[d] = (length == 0 || ((length < 0) != (st < 0))) ? 0 : length / st + (length % st != 0 ? 1 : 0);
  }
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", out, "begin, end and strides")) return rc;
  const size_t es = dtype_size(c.in[0].dtype);
  *run = [c, first, strides, out, es] {
    const std::vector<int64_t> x_strides = row_major_strides(c.in[0].dims);
    int64_t base = 0;
    std::vector<int64_t> step(first.size());
    for (size_t d = 0; d < first.size(); ++d) {
      base += first[d] * x_strides[d];
      step[d] = strides[d] * x_strides[d];
    }
    const auto* x = static_cast<const unsigned char*>(c.in[0].data);
    auto* y = static_cast<unsigned char*>(c.out[0].data);
    std::array<std::vector<int64_t>, 1> s{step};
    for_each_broadcast(out, s, [&](int64_t i, const std::array<int64_t, 1>& o) {
      std::memmove(y + i * es, x + (base + o[0]) * static_cast<int64_t>(es), es);
    });
  };
  return ACL_SUCCESS;
}

// Tile(x, multiples) -> y, y[i] = x[i mod x's dims] per dim (hicann/ops-math math/tile:
// op_graph/tile_proto.h "Compatible with the TensorFlow operator Tile"; multiples "a 1D Tensor of
// type int32 or int64. The length must be the same as the number of dimensions in input"; y "the
// same type as x"; README: Atlas A2/A3, Ascend 950, Atlas inference and training series). Any
// dtype the proto lists and the simulator has (copied by size); multiples must be constant and
// >= 0 (TensorFlow's rule); y's dims = x's dims * multiples.
aclError k_tile(const OpCall& c, Run* run) {
  if (aclError rc = expect_x_to_y(c, 2,
                                  {ACL_FLOAT, ACL_FLOAT16, ACL_DOUBLE, ACL_INT8, ACL_UINT8, ACL_INT16, ACL_UINT16,
                                   ACL_INT32, ACL_UINT32, ACL_INT64, ACL_UINT64, ACL_BF16, ACL_BOOL}))
    return rc;
  const OpTensor& x = c.in[0];
  std::vector<int64_t> multiples;
  bool known = false;
  if (aclError rc = read_index_list(c, 1, "input 1 (multiples)", /*need_const=*/true, &multiples, &known)) return rc;
  if (multiples.size() != x.dims.size())
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "Tile: input 1 (multiples) %s must have one entry per dim of x %s",
                shape_str(multiples).c_str(), shape_str(x.dims).c_str());
  std::vector<int64_t> want;
  for (size_t i = 0; i < multiples.size(); ++i) {
    if (multiples[i] < 0)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "Tile: input 1 (multiples) %s has a negative entry",
                  shape_str(multiples).c_str());
    want.push_back(x.dims[i] * multiples[i]);
  }
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", want, "x's dims * multiples")) return rc;
  const size_t es = dtype_size(x.dtype);
  *run = [c, es] {
    const auto* src = static_cast<const unsigned char*>(c.in[0].data);
    auto* dst = static_cast<unsigned char*>(c.out[0].data);
    const std::vector<int64_t>& xd = c.in[0].dims;
    for_each_index(c.out[0].dims, [&](int64_t i, const std::vector<int64_t>& idx) {
      int64_t at = 0;
      for (size_t d = 0; d < idx.size(); ++d) at = at * xd[d] + idx[d] % xd[d];
      std::memcpy(dst + i * static_cast<int64_t>(es), src + at * static_cast<int64_t>(es), es);
    });
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

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(tensor, {"Tile", k_tile}, {"BroadcastToD", k_broadcast_to}, {"Expand", k_expand}, {"Fill", k_fill},
           {"TransposeD", k_transpose}, {"Identity", k_identity}, {"Transpose", k_transpose_v}, {"Slice", k_slice},
           {"StridedSlice", k_strided_slice})

}  // namespace aclsim
