// Standard ONNX ops placed on the CANN EP (domain ai.ortops.cann, see rewrite/placement): the
// op type, inputs and attributes are ONNX's; the kernel runs CANN single ops on the session's
// stream. One DeclaredOp per supported combination of element types.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "cann/acl_op.h"
#include "cann/cann_run.h"
#include "cann/soc.h"
#include "common/declared_op.h"
#include "common/op_base.h"
#include "common/tensor_io.h"

namespace ortops::placed {

using cann::AclOp;
using cann::AclTypeOf;
using cann::CannRun;

constexpr ONNXTensorElementDataType kF32 = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
constexpr ONNXTensorElementDataType kF16 = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
constexpr ONNXTensorElementDataType kBF16 = ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
constexpr ONNXTensorElementDataType kF64 = ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
constexpr ONNXTensorElementDataType kI32 = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
constexpr ONNXTensorElementDataType kI64 = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
constexpr ONNXTensorElementDataType kI8 = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
constexpr ONNXTensorElementDataType kI16 = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
constexpr ONNXTensorElementDataType kU8 = ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
constexpr ONNXTensorElementDataType kU16 = ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16;
constexpr ONNXTensorElementDataType kU32 = ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32;
constexpr ONNXTensorElementDataType kU64 = ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64;
constexpr ONNXTensorElementDataType kBool = ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;

// A file's ops register through `void RegisterCann(OpList& list)` (common/declared_op.h), one
// list.Add(op type, inputs, outputs, factory) per combination of element types.

// One op name per output type, for a placed op whose inputs do not decide its output type (Cast,
// ConstantOfShape): ORT infers a custom op's output type from its input types alone, so one name
// with several output types would get the first one's.
struct OpOfOutputType {
  const char* op;
  ONNXTensorElementDataType type;
};

inline IoSpec In(ONNXTensorElementDataType type) { return IoSpec{type, false, false}; }
inline IoSpec Optional(ONNXTensorElementDataType type) { return IoSpec{type, true, false}; }
// An input the kernel reads on the host (shape, axes): an int64 tensor ORT keeps in CPU memory.
inline IoSpec HostInts(bool optional = false) { return IoSpec{kI64, optional, true}; }
// The last input or output, repeated (Concat's inputs, Split's outputs), each of `type`.
inline IoSpec Variadic(ONNXTensorElementDataType type) { return IoSpec{type, false, false, true}; }

// The CANN op types a placed kernel launches on one of its routes: written once, in
// ort_ops/cann_soc_table.json "placed" (ONNX op -> route -> CANN ops), which rewrite.placement reads
// too; CMake compiles it in (cann_soc_table.inc).
struct Launches {
  const char* onnx_op;
  const char* route;
  size_t count;
  const char* ops[5];  // ort_ops/cann_soc.py MAX_ROUTE_OPS (more initializers than this: a compile error)
};
constexpr const char* kDefaultRoute = "default";
// The entry of `onnx_op` on `route`, or nullptr if the table has none.
const Launches* FindLaunches(const char* onnx_op, const char* route);
// The first of `routes` (alternatives in preference order, as the placement rule lists them) whose
// CANN ops the session's SoC has; the first one if none has them (its check then fails naming the
// missing op) or ACL is missing.
const char* RouteOnSoc(const char* onnx_op, std::initializer_list<const char*> routes);

// The kernel base of placed ops: the node's op type and name (errors), the ACL functions checked
// at creation against the SoC for the CANN ops the kernel launches on `route` (its entry in the
// table above, under `onnx_op`: the placed op's name unless given).
class PlacedKernel : public Kernel {
 public:
  PlacedKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status, const char* route = kDefaultRoute,
               const char* onnx_op = nullptr);

 protected:
  const char* name() const { return name_; }
  // CANN op `index` of the route checked at creation ("" if it has fewer).
  const char* Launch(size_t index) const {
    return launches_ != nullptr && index < launches_->count ? launches_->ops[index] : "";
  }
  // nullptr if the SoC has the CANN ops of `route` (a route the kernel takes for some inputs only).
  OrtStatusPtr RequireRoute(const cann::AclApi& acl, const char* route) const;
  // An error "<op> node '<node name>' on CANN: <what>".
  OrtStatusPtr Fail(const std::string& what) const;
  // CannRun::WaitForDeviceFaults naming this node: after launching `acl_op`, a device fault fails
  // this node by name.
  OrtStatusPtr SyncForDeviceFaults(const CannRun& run, const char* acl_op) const;
  // `out` (`shape` elements of `type`) filled with the one element whose bytes are `value`:
  // aclrtMemsetAsync when SameBytes(value), else CANN Fill (GE op_proto fill.h, REG_OP(Fill): dims
  // "a 1D tensor of types int32 or int64", value "a 0D scalar"; a rank-0 output as dims [1], the
  // same bytes). The launch of placed ConstantOfShape and of ReduceMax / ReduceMin over no element.
  OrtStatusPtr FillOnDevice(const CannRun& run, const std::vector<unsigned char>& value, ONNXTensorElementDataType type,
                            const std::vector<int64_t>& shape, void* out) const;

  // Allocates output 0 with `shape` and, unless it is empty (which needs no launch), begins the CANN
  // run (ACL functions and the stream) and returns launch(run, out): the end of every placed kernel.
  template <typename Launch>
  OrtStatusPtr OnOutput(OrtKernelContext* context, const std::vector<int64_t>& shape, Launch&& launch) const {
    void* out = nullptr;
    CannRun run;
    ORTOPS_RETURN_IF_ERROR(BeginOutput(context, shape, &out, &run));
    if (out == nullptr) return nullptr;
    return launch(run, out);
  }
  // Reads required input `index` (named `what` in errors): an error if it is absent.
  OrtStatusPtr Input(OrtKernelContext* context, size_t index, const char* what, TensorView* view) const;
  // ReadIntegers of a host input.
  OrtStatusPtr Ints(const TensorView& view, const char* what, std::vector<int64_t>* values) const;
  // Input, then Ints: the values of required host input `index` (its view in `*view` if given).
  OrtStatusPtr InputInts(OrtKernelContext* context, size_t index, const char* what, std::vector<int64_t>* values,
                         TensorView* view = nullptr) const;
  // Reads X (input 0), the weights named `weights` in errors (input 1) and the optional bias (input 2):
  // the inputs of Conv, ConvTranspose and LayerNormalization.
  OrtStatusPtr WeightedInputs(OrtKernelContext* context, const char* weights, TensorView* x, TensorView* w,
                              TensorView* b) const;
  // Reads `data` (input 0) and `indices` (input 1) and makes `axis` (the node's attribute) an axis
  // of data (AxisOf): what Gather and GatherElements start with.
  OrtStatusPtr DataIndicesAxis(OrtKernelContext* context, int64_t axis, TensorView* data, TensorView* indices,
                               int64_t* data_axis) const;
  // The node's `axis` attribute of input `x` (named `what` in the error) in [0, rank): negative
  // axes count from the end; an error naming the axis and x's shape if it is out of range.
  OrtStatusPtr AxisOf(int64_t axis, const TensorView& x, const char* what, int64_t* out) const;

  const cann::AclApi* acl_ = nullptr;

 private:
  std::string Who() const;  // "<op> node '<node name>' on CANN"
  // Allocates output 0 and, unless it is empty, begins the CANN run: *out stays null if empty.
  OrtStatusPtr BeginOutput(OrtKernelContext* context, const std::vector<int64_t>& shape, void** out,
                           CannRun* run) const;

  const char* name_;
  const char* onnx_op_;                 // the key of its CANN op lists
  const Launches* launches_ = nullptr;  // of the route checked at creation
  std::string node_;                    // the node's name ("" if it has none)
};

// The factory of kernel class K constructed as K(info, op, &status, args...).
template <typename K, auto... args>
OrtStatusPtr Make(const OrtKernelInfo* info, const DeclaredOp& op, Kernel** kernel) {
  OrtStatusPtr status = nullptr;
  auto* made = new K(info, op, &status, args...);
  if (status != nullptr) {
    delete made;
    return status;
  }
  *kernel = made;
  return nullptr;
}

// The numpy broadcast of two shapes; false if they do not broadcast.
bool BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out);

// Whether every byte of `value` is its first: a fill with it is an aclrtMemsetAsync.
bool SameBytes(const std::vector<unsigned char>& value);

// CANN Slice of `x` (offsets and size: one entry per dim, as constant inputs) into `out` (size's
// elements of x's type): the launch of placed Slice and Gather.
OrtStatusPtr LaunchSlice(const CannRun& run, const TensorView& x, const std::vector<int64_t>& offsets,
                         const std::vector<int64_t>& size, void* out);

// ONNX's negative indices (counted from the end) made non-negative on the device, for the CANN ops that
// take indices in [0, size): *normalized = SelectV2(Less(indices, 0), Add(indices, sizes), indices),
// three launches into `scratch` (NormalizingScratchBytes(indices) bytes of device memory). `sizes`:
// one entry (every index on one axis) or one per entry of the indices' last dim (ScatterND's tuples).
// An index out of range stays out of range, so the op's device fault still names it. int32/int64.
size_t NormalizingScratchBytes(const TensorView& indices);
OrtStatusPtr NormalizeNegativeIndices(const CannRun& run, const TensorView& indices, const std::vector<int64_t>& sizes,
                                      char* scratch, void** normalized);

// `axis` of a rank-`rank` tensor in [0, rank): negative axes count from the end; false if out of range.
bool NormalizeAxis(int64_t axis, size_t rank, int64_t* out);

// Bytes of a tensor view.
inline size_t Bytes(const TensorView& view) { return view.count * ElementSize(view.type); }

}  // namespace ortops::placed
