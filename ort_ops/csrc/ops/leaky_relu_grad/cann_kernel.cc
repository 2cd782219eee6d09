// LeakyReluGrad on the CANN EP: CANN's own single op LeakyReluGrad (hicann/ops-nn
// activation/leaky_relu_grad: backprops = features > 0 ? gradients : gradients * negative_slope)
// on the session's stream, in float32:
//   float32:          LeakyReluGrad(g, f){negative_slope}                               (1 launch)
//   float16/bfloat16: [Cast g, f -> float32]; LeakyReluGrad; [Cast -> T]                (4 launches)
// so the math is float32 with one round-to-nearest-even cast, as the op's definition says (CANN's
// own float16/bfloat16 kernels need not compute in float32). The float32 intermediates live in
// per-stream scratch (stream_scratch.h). A SoC without the ops fails the session naming the SoC
// and the op (cann/soc.h). Empty tensors launch nothing.
#include "cann/acl_op.h"
#include "cann/acl_types.h"
#include "cann/cann_run.h"
#include "cann/soc.h"
#include "cann/stream_scratch.h"
#include "common/op_base.h"
#include "ops/leaky_relu_grad/leaky_relu_grad.h"

namespace ortops::leaky_relu_grad {
namespace {

using cann::AclOp;
using cann::CannRun;
using cann::kAclType;
using cann::ScratchLease;
using cann::ScratchUser;

template <typename T>
struct CannKernel {
  explicit CannKernel(const Def::Attributes& attributes) : slope(attributes.negative_slope) {}
  const float slope;
  mutable ScratchUser scratch;
  static constexpr bool kFloat32 = kAclType<T> == ACL_FLOAT;

  OrtStatusPtr Init() {
    const cann::AclApi* acl = nullptr;
    ORTOPS_RETURN_IF_ERROR(cann::AclForKernel(Def::kName, &acl));
    if (kFloat32) return cann::RequireOps(*acl, Def::kName, {"LeakyReluGrad"});
    return cann::RequireOps(*acl, Def::kName, {"LeakyReluGrad", "Cast"});
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const {
    ElementwiseIo io;
    ORTOPS_RETURN_IF_ERROR(PrepareElementwise(context, Def::kName, Def::InputNames(), T::kOnnxType, &io));
    if (io.count == 0) return nullptr;  // CANN rejects empty tensors; the result is empty anyway
    CannRun run;
    ORTOPS_RETURN_IF_ERROR(CannRun::Begin(context, Def::kName, &run));
    const auto& shape = io.shape;
    const size_t f32_bytes = io.count * sizeof(float);
    if (kFloat32) return LeakyReluGrad(run, io.inputs[0], io.inputs[1], io.output, f32_bytes, shape);
    // scratch: g32 | f32 | y32, each slot cann::kScratchAlign aligned
    const size_t slot = cann::ScratchAligned(f32_bytes);
    ScratchLease lease;
    ORTOPS_RETURN_IF_ERROR(scratch.Acquire(context, io.memory, *run.acl, run.stream, 3 * slot, &lease));
    char* g32 = lease.data();
    char* f32 = g32 + slot;
    char* y32 = f32 + slot;
    const size_t bytes = io.count * sizeof(typename T::Storage);
    ORTOPS_RETURN_IF_ERROR(Cast(run, io.inputs[0], bytes, kAclType<T>, g32, f32_bytes, ACL_FLOAT, shape));
    ORTOPS_RETURN_IF_ERROR(Cast(run, io.inputs[1], bytes, kAclType<T>, f32, f32_bytes, ACL_FLOAT, shape));
    ORTOPS_RETURN_IF_ERROR(LeakyReluGrad(run, g32, f32, y32, f32_bytes, shape));
    return Cast(run, y32, f32_bytes, ACL_FLOAT, io.output, bytes, kAclType<T>, shape);
  }

  OrtStatusPtr LeakyReluGrad(const CannRun& run, const void* g, const void* f, void* y, size_t bytes,
                             const std::vector<int64_t>& shape) const {
    return AclOp(*run.acl, "LeakyReluGrad")
        .Input(g, bytes, ACL_FLOAT, shape)
        .Input(f, bytes, ACL_FLOAT, shape)
        .Output(y, bytes, ACL_FLOAT, shape)
        .AttrFloat("negative_slope", slope)
        .Run(run.stream);
  }

  static OrtStatusPtr Cast(const CannRun& run, const void* x, size_t x_bytes, aclDataType x_type, void* y,
                           size_t y_bytes, aclDataType y_type, const std::vector<int64_t>& shape) {
    return AclOp(*run.acl, "Cast")
        .Input(x, x_bytes, x_type, shape)
        .Output(y, y_bytes, y_type, shape)
        .AttrInt("dst_type", y_type)
        .Run(run.stream);
  }
};

}  // namespace

const std::vector<OrtCustomOp*>& CannOps() { return FloatOps<Def, CannKernel>(kCannProvider); }

}  // namespace ortops::leaky_relu_grad
