// ArgMax / ArgMin (11, 12, 13; axis, keepdims, select_last_index 0) placed on CANN: CANN ArgMaxV2 / ArgMin
// (hicann/ops-math math/arg_max_v2, math/arg_min: op_graph/*_proto.h, x and a constant one-element dimension, y
// int64 by the dtype attribute 9, the axis dropped; equal extremes give the first index, as ONNX's
// select_last_index 0). NaN: CANN's answer is the first NaN (the kernels' golden, tests/assets/golden.py:
// np.argmax / np.argmin). ONNX Runtime's CPU EP (measured, onnxruntime-cann's) gives the same for a 1-D x, but for
// x of rank >= 2 it keeps the first element while no later one compares greater (less): a NaN first element wins,
// a later NaN never does. Floats of rank >= 2 therefore take SelectV2(NotEqual(x, x), edge, x) first (route
// "default"), where the constant `edge` (broadcast along the axis) is +inf at position 0 and -inf after it for
// ArgMax (the reverse for ArgMin): a NaN at 0 then wins, a later one loses to (or ties after) every element before
// it, which is the CPU EP's index. A 1-D x and integers ("integer"): the one launch.
// select_last_index 1 (routes "last", "last_integer"): the first index of x reversed along the axis (StridedSlice with
// step -1), subtracted from depth - 1 (Sub). The CPU EP (measured) scans for x[k] >= best from x[0] then, for any
// rank, so a NaN first element wins and a later NaN never does: floats take the same SelectV2(NotEqual(x, x), edge,
// x) first. Exact but where NaN meets infinities: with x[0] NaN and a later +inf (ArgMax; -inf for ArgMin) the
// later infinity's index, where the CPU EP gives 0; with a NaN after the last of the row's extremes when those
// are -inf (ArgMax; +inf for ArgMin), the NaN's index.
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cann/sequence_kernel.h"
#include "placed/common/placed_op.h"

namespace ortops::placed::arg_min_max {
namespace {

bool IsFloat(ONNXTensorElementDataType t) { return t == kF32 || t == kF16; }

const char* RouteOf(ONNXTensorElementDataType t, bool last) {
  if (last) return IsFloat(t) ? "last" : "last_integer";
  return IsFloat(t) ? kDefaultRoute : "integer";
}

// The node's select_last_index (0 if unreadable: the constructor reads it again and reports the error).
bool SelectLast(const OrtKernelInfo* info) {
  int64_t last = 0;
  OrtStatusPtr status = ReadIntAttribute(info, "ArgMax/ArgMin", "select_last_index", 0, &last);
  if (status != nullptr) Api().ReleaseStatus(status);
  return last != 0;
}

class ArgKernel : public PlacedKernel {
 public:
  ArgKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status, RouteOf(op.GetInputType(0), SelectLast(info))),
        is_max_(std::strcmp(op.GetName(), "ArgMax") == 0),
        float_(IsFloat(op.GetInputType(0))) {
    if (*status != nullptr) return;
    int64_t select_last = 0;
    *status = ReadIntAttribute(info, name(), "axis", 0, &axis_);
    if (*status == nullptr) *status = ReadIntAttribute(info, name(), "keepdims", 1, &keepdims_);
    if (*status == nullptr) *status = ReadIntAttribute(info, name(), "select_last_index", 0, &select_last);
    last_ = select_last != 0;
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "data", &x));
    int64_t axis = 0;
    ORTOPS_RETURN_IF_ERROR(AxisOf(axis_, x, "data", &axis));
    const int64_t depth = x.shape[static_cast<size_t>(axis)];
    if (depth == 0)
      return Fail("data of shape " + ShapeText(x.shape) + " has no element along axis " + std::to_string(axis));
    std::vector<int64_t> reduced = x.shape, kept = x.shape;
    reduced.erase(reduced.begin() + axis);
    kept[static_cast<size_t>(axis)] = 1;
    return OnOutput(context, keepdims_ != 0 ? kept : reduced, [&](CannRun& begun, void* out) -> OrtStatusPtr {
      const aclDataType type = AclTypeOf(x.type);
      const int64_t count = static_cast<int64_t>(x.count) / depth;
      const std::vector<int64_t> y_dims = reduced.empty() ? std::vector<int64_t>{1} : reduced;
      const int64_t dimension = axis;
      const size_t index_bytes = static_cast<size_t>(count) * sizeof(int64_t);
      auto arg = [&](const CannRun& run, const void* data, void* to) {
        return AclOp(*run.acl, is_max_ ? "ArgMaxV2" : "ArgMin")
            .Input(data, Bytes(x), type, x.shape)
            .ConstInput(&dimension, sizeof(dimension), ACL_INT64, {1})
            .Output(to, index_bytes, ACL_INT64, y_dims)
            .AttrInt("dtype", 9)  // ge::DT_INT64
            .Run(run.stream);
      };
      if (!last_ && (!float_ || x.shape.size() == 1)) return arg(begun, x.data, out);  // see the top of the file
      cann::SequenceRun run;
      static_cast<CannRun&>(run) = begun;
      cann::ScratchLayout layout;
      const size_t nan_at = layout.Add(float_ ? x.count : 0), clean_at = layout.Add(float_ ? Bytes(x) : 0);
      const size_t reversed_at = layout.Add(last_ ? Bytes(x) : 0), first_at = layout.Add(last_ ? index_bytes : 0);
      ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, layout.size()));
      // the last index: depth - 1 - the first index of x reversed along the axis
      auto last = [&](const void* data) -> OrtStatusPtr {
        const auto rank = static_cast<int64_t>(x.shape.size());
        std::vector<int64_t> begin(x.shape.size(), 0), end = x.shape, step(x.shape.size(), 1);
        begin[static_cast<size_t>(axis)] = depth - 1;
        end[static_cast<size_t>(axis)] = -1;  // before the first element: its end_mask bit (see placed/slice.cc)
        step[static_cast<size_t>(axis)] = -1;
        void* reversed = run.Scratch(reversed_at);
        void* first = run.Scratch(first_at);
        ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "StridedSlice")
                                   .Input(data, Bytes(x), type, x.shape)
                                   .ConstInput(begin.data(), begin.size() * sizeof(int64_t), ACL_INT64, {rank})
                                   .ConstInput(end.data(), end.size() * sizeof(int64_t), ACL_INT64, {rank})
                                   .ConstInput(step.data(), step.size() * sizeof(int64_t), ACL_INT64, {rank})
                                   .Output(reversed, Bytes(x), type, x.shape)
                                   .AttrInt("begin_mask", 0)
                                   .AttrInt("end_mask", int64_t{1} << axis)
                                   .Run(run.stream));
        ORTOPS_RETURN_IF_ERROR(arg(run, reversed, first));
        const int64_t top = depth - 1;
        return AclOp(*run.acl, "Sub")
            .ConstInput(&top, sizeof(top), ACL_INT64, {1})
            .Input(first, index_bytes, ACL_INT64, y_dims)
            .Output(out, index_bytes, ACL_INT64, y_dims)
            .Run(run.stream);
      };
      if (!float_) return last(x.data);
      void* is_nan = run.Scratch(nan_at);
      void* clean = run.Scratch(clean_at);
      // edge: [1, ..., depth, ..., 1] of x's type, the first +inf (ArgMax) or -inf (ArgMin), the rest the other.
      std::vector<int64_t> edge_dims(x.shape.size(), 1);
      edge_dims[static_cast<size_t>(axis)] = depth;
      const size_t size = ElementSize(x.type);
      std::vector<unsigned char> edge(static_cast<size_t>(depth) * size);
      const float first = is_max_ ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
      const uint16_t first16 = is_max_ ? 0x7C00 : 0xFC00, rest16 = is_max_ ? 0xFC00 : 0x7C00;
      for (int64_t k = 0; k < depth; ++k) {
        if (x.type == kF32) {
          const float v = k == 0 ? first : -first;
          std::memcpy(edge.data() + k * size, &v, size);
        } else {
          const uint16_t v = k == 0 ? first16 : rest16;
          std::memcpy(edge.data() + k * size, &v, size);
        }
      }
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "NotEqual")
                                 .Input(x.data, Bytes(x), type, x.shape)
                                 .Input(x.data, Bytes(x), type, x.shape)
                                 .Output(is_nan, x.count, ACL_BOOL, x.shape)
                                 .Run(run.stream));
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "SelectV2")
                                 .Input(is_nan, x.count, ACL_BOOL, x.shape)
                                 .ConstInput(edge.data(), edge.size(), type, edge_dims)
                                 .Input(x.data, Bytes(x), type, x.shape)
                                 .Output(clean, Bytes(x), type, x.shape)
                                 .Run(run.stream));
      return last_ ? last(clean) : arg(run, clean, out);
    });
  }

 private:
  bool is_max_;
  bool float_;
  bool last_ = false;
  int64_t axis_ = 0;
  int64_t keepdims_ = 1;
  mutable cann::ScratchUser scratch_;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (ONNXTensorElementDataType t : {kF32, kF16, kI32, kI64}) list.Add(op, {In(t)}, {In(kI64)}, Make<ArgKernel>);
  }
}

}  // namespace ortops::placed::arg_min_max
