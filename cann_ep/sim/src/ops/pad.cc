// PadV3 (hicann/ops-math conversion/pad_v3: README.md, op_graph/pad_v3_proto.h, "Compatible with
// ONNX operator Pad"): (x, paddings: int32/int64 [2 * rank], constant_values: optional, x's dtype,
// one element) -> y, y.shape[i] = x.shape[i] + leftpad_i + rightpad_i >= 0.
//
// Attributes: mode ("constant", the default; "edge"; "reflect"; "symmetric" and "circular" are
// arch35 = Ascend 950 only, not simulated), paddings_contiguous (true: [[left_0, right_0], ...];
// false: [[left_0, left_1, ...], [right_0, ...]], ONNX's order). A negative pad removes elements.
// The proto's ranges: constant and edge pads >= -x.shape[i]; reflect pads in [-x.shape[i],
// x.shape[i]) (negative reflect pads are refused here: the spec does not say which border a
// cropped axis reflects about). paddings must be constant here (its values decide y's shape).
//
// Semantics per axis, for an output index o and p = o - left: constant: x[p] inside x, else
// constant_values (0 without it); edge: x[clamp(p, 0, dim - 1)]; reflect (borders not repeated):
// p < 0 -> -p, p >= dim -> 2 (dim - 1) - p. Elements are copied by size (every simulated dtype).
#include <cctype>
#include <cstring>
#include <string>

#include "broadcast.h"
#include "dtypes.h"
#include "internal.h"
#include "op_call.h"

namespace aclsim {
namespace {

enum class PadMode { kConstant, kEdge, kReflect };

// The source index along an axis of `dim` elements for padded position p (-1: the constant).
int64_t source_index(PadMode mode, int64_t p, int64_t dim) {
  if (p >= 0 && p < dim) return p;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return p < 0 ? 0 : dim - 1;
    case PadMode::kReflect: return p < 0 ? -p : 2 * (dim - 1) - p;
  }
  return -1;
}

}  // namespace

aclError k_pad_v3(const OpCall& c, Run* run) {
  const char* op = c.type.c_str();
  if (c.in.size() < 2 || c.in.size() > 3)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: expected 2 or 3 inputs (x, paddings, constant_values), got %zu", op,
                c.in.size());
  if (c.out.size() != 1) return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "%s: expected 1 output, got %zu", op, c.out.size());
  const OpTensor &x = c.in[0], &y = c.out[0];
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", x,
                                    {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE, ACL_INT8, ACL_UINT8, ACL_INT16,
                                     ACL_UINT16, ACL_INT32, ACL_UINT32, ACL_INT64, ACL_UINT64, ACL_BOOL}))
    return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  const bool has_value = c.in.size() == 3 && !c.in[2].absent;
  if (has_value) {
    if (aclError rc = expect_same_dtype(c, "input 2 (constant_values)", c.in[2], "input 0 (x)", x)) return rc;
    if (c.in[2].numel != 1)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 2 (constant_values) has shape %s, expected one element", op,
                  shape_str(c.in[2].dims).c_str());
  }
  std::string mode_name = c.attr_string("mode", "constant");
  for (char& ch : mode_name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  PadMode mode;
  if (mode_name == "constant") {
    mode = PadMode::kConstant;
  } else if (mode_name == "edge") {
    mode = PadMode::kEdge;
  } else if (mode_name == "reflect") {
    mode = PadMode::kReflect;
  } else if (mode_name == "symmetric" || mode_name == "circular") {
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: mode \"%s\" is supported since arch35 (Ascend 950), not simulated",
                op, mode_name.c_str());
  } else {
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute mode is \"%s\", expected constant, edge or reflect", op,
                mode_name.c_str());
  }
  if (has_value && mode != PadMode::kConstant)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 2 (constant_values) is used only in constant mode", op);
  std::vector<int64_t> paddings;
  bool known = false;
  if (aclError rc = read_index_list(c, 1, "input 1 (paddings)", /*need_const=*/true, &paddings, &known)) return rc;
  const size_t rank = x.dims.size();
  if (paddings.size() != 2 * rank)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 1 (paddings) %s must have twice x's rank (%zu) entries", op,
                shape_str(paddings).c_str(), rank);
  const bool contiguous = c.attr_int("paddings_contiguous", 1) != 0;
  std::vector<int64_t> left(rank), right(rank), want(rank);
  for (size_t i = 0; i < rank; ++i) {
    left[i] = contiguous ? paddings[2 * i] : paddings[i];
    right[i] = contiguous ? paddings[2 * i + 1] : paddings[rank + i];
    const int64_t dim = x.dims[i];
    const bool in_range = mode == PadMode::kReflect
                              ? left[i] >= -dim && left[i] < dim && right[i] >= -dim && right[i] < dim
                              : left[i] >= -dim && right[i] >= -dim;
    if (mode == PadMode::kReflect && (left[i] < 0 || right[i] < 0))
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                  "%s: input 1 (paddings) %s: negative reflect pads are not simulated (the proto allows them but "
                  "does not say whether the reflection is about the cropped or the original border)",
                  op, shape_str(paddings).c_str());
    if (!in_range)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                  "%s: input 1 (paddings) %s: axis %zu's pads (%lld, %lld) are out of the proto's range for mode %s "
                  "and x %s",
                  op, shape_str(paddings).c_str(), i, static_cast<long long>(left[i]), static_cast<long long>(right[i]),
                  mode_name.c_str(), shape_str(x.dims).c_str());
    want[i] = dim + left[i] + right[i];
    if (want[i] < 0)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: y's dim %zu would be %lld (< 0)", op, i,
                  static_cast<long long>(want[i]));
    if (want[i] > 0 && dim == 0 && mode != PadMode::kConstant)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: mode %s pads an empty axis %zu of x %s", op, mode_name.c_str(), i,
                  shape_str(x.dims).c_str());
  }
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", want, "x's dims + paddings")) return rc;
  const size_t es = dtype_size(x.dtype);
  *run = [c, es, mode, left, has_value] {
    const auto* src = static_cast<const unsigned char*>(c.in[0].data);
    const auto* value = has_value ? static_cast<const unsigned char*>(c.in[2].data) : nullptr;
    auto* dst = static_cast<unsigned char*>(c.out[0].data);
    const std::vector<int64_t>& xd = c.in[0].dims;
    for_each_index(c.out[0].dims, [&](int64_t i, const std::vector<int64_t>& idx) {
      int64_t at = 0;
      bool constant = false;
      for (size_t d = 0; d < idx.size() && !constant; ++d) {
        const int64_t s = source_index(mode, idx[d] - left[d], xd[d]);
        constant = s < 0;
        at = at * xd[d] + s;
      }
      unsigned char* out = dst + i * static_cast<int64_t>(es);
      if (!constant) {
        std::memcpy(out, src + at * static_cast<int64_t>(es), es);
      } else if (value != nullptr) {
        std::memcpy(out, value, es);
      } else {
        std::memset(out, 0, es);  // zero of every simulated dtype
      }
    });
  };
  return ACL_SUCCESS;
}

ACLSIM_OPS(pad, {"PadV3", k_pad_v3})

}  // namespace aclsim
