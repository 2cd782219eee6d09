// Shared parts of the placed ops' kernels.
#include "placed/common/placed_op.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "cann/stream_scratch.h"
#include "common/element_type.h"

namespace ortops::placed {

namespace {

const Launches kLaunches[] = {
#define CANN_PLACED_ROUTE(onnx_op, route, count, ...) {onnx_op, route, count, __VA_ARGS__},
#include "cann_soc_table.inc"
};

}  // namespace

const Launches* FindLaunches(const char* onnx_op, const char* route) {
  for (const Launches& l : kLaunches) {
    if (std::strcmp(l.onnx_op, onnx_op) == 0 && std::strcmp(l.route, route) == 0) return &l;
  }
  return nullptr;
}

const char* RouteOnSoc(const char* onnx_op, std::initializer_list<const char*> routes) {
  const cann::AclApi* acl = nullptr;
  OrtStatusPtr status = cann::AclForKernel(onnx_op, &acl);
  if (status != nullptr) {
    Api().ReleaseStatus(status);
    return *routes.begin();
  }
  for (const char* route : routes) {
    const Launches* launches = FindLaunches(onnx_op, route);
    if (launches == nullptr) continue;
    bool all = true;
    for (size_t i = 0; i < launches->count && all; ++i) {
      all = cann::UnavailableReason(cann::SocName(*acl), launches->ops[i]) == nullptr;
    }
    if (all) return route;
  }
  return *routes.begin();
}

PlacedKernel::PlacedKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status, const char* route,
                           const char* onnx_op)
    : name_(op.GetName()), onnx_op_(onnx_op != nullptr ? onnx_op : op.GetName()) {
  *status = cann::KernelNodeName(info, &node_);
  if (*status == nullptr) *status = cann::AclForKernel(name_, &acl_);
  if (*status == nullptr) *status = RequireRoute(*acl_, route);
  if (*status == nullptr) launches_ = FindLaunches(onnx_op_, route);
}

OrtStatusPtr PlacedKernel::RequireRoute(const cann::AclApi& acl, const char* route) const {
  const Launches* launches = FindLaunches(onnx_op_, route);
  if (launches == nullptr) {
    return Fail(std::string("ort_ops/cann_soc_table.json has no CANN op list for ") + onnx_op_ + " route " + route);
  }
  return cann::RequireOps(acl, name_, launches->ops, launches->count);
}

std::string PlacedKernel::Who() const { return std::string(name_) + " node '" + node_ + "' on CANN"; }

OrtStatusPtr PlacedKernel::Fail(const std::string& what) const { return MakeError(Who() + ": " + what); }

OrtStatusPtr PlacedKernel::BeginOutput(OrtKernelContext* context, const std::vector<int64_t>& shape, void** out,
                                       CannRun* run) const {
  ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 0, shape, out));
  if (*out == nullptr) return nullptr;
  return CannRun::Begin(context, name_, run);
}

OrtStatusPtr PlacedKernel::SyncForDeviceFaults(const CannRun& run, const char* acl_op) const {
  return run.WaitForDeviceFaults(Who(), acl_op);
}

OrtStatusPtr PlacedKernel::Input(OrtKernelContext* context, size_t index, const char* what, TensorView* view) const {
  ORTOPS_RETURN_IF_ERROR(GetInput(context, index, view));
  if (!view->present) return Fail(std::string("input ") + what + " is missing");
  return nullptr;
}

OrtStatusPtr PlacedKernel::Ints(const TensorView& view, const char* what, std::vector<int64_t>* values) const {
  return ReadIntegers(view, name_, what, values);
}

OrtStatusPtr PlacedKernel::InputInts(OrtKernelContext* context, size_t index, const char* what,
                                     std::vector<int64_t>* values, TensorView* view) const {
  TensorView read;
  TensorView* input = view != nullptr ? view : &read;
  ORTOPS_RETURN_IF_ERROR(Input(context, index, what, input));
  return Ints(*input, what, values);
}

OrtStatusPtr PlacedKernel::WeightedInputs(OrtKernelContext* context, const char* weights, TensorView* x, TensorView* w,
                                          TensorView* b) const {
  ORTOPS_RETURN_IF_ERROR(Input(context, 0, "X", x));
  ORTOPS_RETURN_IF_ERROR(Input(context, 1, weights, w));
  return GetInput(context, 2, b);
}

OrtStatusPtr PlacedKernel::DataIndicesAxis(OrtKernelContext* context, int64_t axis, TensorView* data,
                                           TensorView* indices, int64_t* data_axis) const {
  ORTOPS_RETURN_IF_ERROR(Input(context, 0, "data", data));
  ORTOPS_RETURN_IF_ERROR(Input(context, 1, "indices", indices));
  return AxisOf(axis, *data, "data", data_axis);
}

OrtStatusPtr PlacedKernel::AxisOf(int64_t axis, const TensorView& x, const char* what, int64_t* out) const {
  if (NormalizeAxis(axis, x.shape.size(), out)) return nullptr;
  return Fail("axis " + std::to_string(axis) + " is out of range for " + what + " of shape " + ShapeText(x.shape));
}

size_t NormalizingScratchBytes(const TensorView& indices) {
  return cann::ScratchAligned(indices.count) + 2 * cann::ScratchAligned(Bytes(indices));
}

OrtStatusPtr NormalizeNegativeIndices(const CannRun& run, const TensorView& indices, const std::vector<int64_t>& sizes,
                                      char* scratch, void** normalized) {
  const aclDataType type = AclTypeOf(indices.type);
  const bool wide = indices.type == kI64;
  const size_t es = wide ? sizeof(int64_t) : sizeof(int32_t);
  std::vector<unsigned char> zero(es, 0), size_bytes(sizes.size() * es);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t v64 = sizes[i];
    const auto v32 = static_cast<int32_t>(sizes[i]);
    std::memcpy(size_bytes.data() + i * es, wide ? static_cast<const void*>(&v64) : &v32, es);
  }
  const std::vector<int64_t> size_dims =
      sizes.size() == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(sizes.size())};
  char* flags = scratch;
  char* shifted = flags + cann::ScratchAligned(indices.count);
  char* out = shifted + cann::ScratchAligned(Bytes(indices));
  ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "Less")
                             .Input(indices.data, Bytes(indices), type, indices.shape)
                             .ConstInput(zero.data(), es, type, {})
                             .Output(flags, indices.count, ACL_BOOL, indices.shape)
                             .Run(run.stream));
  ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "Add")
                             .Input(indices.data, Bytes(indices), type, indices.shape)
                             .ConstInput(size_bytes.data(), size_bytes.size(), type, size_dims)
                             .Output(shifted, Bytes(indices), type, indices.shape)
                             .Run(run.stream));
  ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "SelectV2")
                             .Input(flags, indices.count, ACL_BOOL, indices.shape)
                             .Input(shifted, Bytes(indices), type, indices.shape)
                             .Input(indices.data, Bytes(indices), type, indices.shape)
                             .Output(out, Bytes(indices), type, indices.shape)
                             .Run(run.stream));
  *normalized = out;
  return nullptr;
}

bool BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = da == 1 ? db : da;
  }
  return true;
}

bool SameBytes(const std::vector<unsigned char>& value) {
  for (unsigned char b : value) {
    if (b != value[0]) return false;
  }
  return true;
}

OrtStatusPtr PlacedKernel::FillOnDevice(const CannRun& run, const std::vector<unsigned char>& value,
                                        ONNXTensorElementDataType type, const std::vector<int64_t>& shape,
                                        void* out) const {
  const size_t bytes = ElementCount(shape) * value.size();
  if (SameBytes(value)) {
    const aclError code = run.acl->MemsetAsync(out, bytes, value[0], bytes, run.stream);
    if (code != ACL_SUCCESS) return Fail("aclrtMemsetAsync returned ACL error " + std::to_string(code));
    return nullptr;
  }
  const std::vector<int64_t> dims = shape.empty() ? std::vector<int64_t>{1} : shape;
  const aclDataType acl_type = AclTypeOf(type);
  return AclOp(*run.acl, "Fill")
      .ConstInput(dims.data(), dims.size() * sizeof(int64_t), ACL_INT64, {static_cast<int64_t>(dims.size())})
      .ConstInput(value.data(), value.size(), acl_type, {1})
      .Output(out, bytes, acl_type, dims)
      .Run(run.stream);
}

OrtStatusPtr LaunchSlice(const CannRun& run, const TensorView& x, const std::vector<int64_t>& offsets,
                         const std::vector<int64_t>& size, void* out) {
  const aclDataType type = AclTypeOf(x.type);
  const auto n = static_cast<int64_t>(x.shape.size());
  return AclOp(*run.acl, "Slice")
      .Input(x.data, Bytes(x), type, x.shape)
      .ConstInput(offsets.data(), offsets.size() * sizeof(int64_t), ACL_INT64, {n})
      .ConstInput(size.data(), size.size() * sizeof(int64_t), ACL_INT64, {n})
      .Output(out, ElementCount(size) * ElementSize(x.type), type, size)
      .Run(run.stream);
}

bool NormalizeAxis(int64_t axis, size_t rank, int64_t* out) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return false;
  *out = axis < 0 ? axis + r : axis;
  return true;
}

}  // namespace ortops::placed
