// EluGrad on the CANN EP, through CANN single ops on the session's stream:
//   alpha == 1: CANN's own EluGrad operator (fp32 math, strict <, select, one RNE cast);
//   alpha != 1: CANN's EluGrad has no alpha, so the same math as single ops in float32:
//     [Cast g, a -> float32]; t = Add(a, [alpha]); p = Mul(g, t); m = Less(a, [0]);
//     y = Select(m, p, g); [Cast y -> T]  — identical semantics and rounding to the reference.
// The scalars 0 and alpha are constant inputs (aclSetTensorConst): no host-to-device copy. The
// float32 intermediates live in per-stream scratch (stream_scratch.h), valid until the ops that
// use them have run, whatever the number of concurrent runs and streams.
// Empty tensors launch nothing. ACL is loaded lazily (see acl_api.h).
#include <string>

#include "cann/acl_api.h"
#include "cann/acl_op.h"
#include "cann/acl_types.h"
#include "cann/stream_scratch.h"
#include "common/op_base.h"
#include "ops/elu_grad/elu_grad.h"

namespace ortops::elu_grad {
namespace {

using cann::AclApi;
using cann::AclOp;
using cann::GetAcl;
using cann::kAclType;
using cann::ScratchLease;
using cann::ScratchUser;

template <typename T>
struct CannKernel {
  explicit CannKernel(const Def::Attributes& attributes) : alpha(attributes.alpha) {}
  const float zero = 0.0f;
  const float alpha;
  mutable ScratchUser scratch;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const {
    ElementwiseIo io;
    ORTOPS_RETURN_IF_ERROR(PrepareElementwise(context, Def::kName, Def::InputNames(), T::kOnnxType, &io));
    if (io.count == 0) return nullptr;  // CANN rejects empty tensors; the result is empty anyway
    std::string error;
    const AclApi* acl = GetAcl(&error);
    if (acl == nullptr) return MakeError("EluGrad on CANN: " + error, ORT_FAIL);
    void* stream = nullptr;
    ORTOPS_RETURN_IF_ERROR(Api().KernelContext_GetGPUComputeStream(context, &stream));
    const size_t bytes = io.count * sizeof(typename T::Storage);
    constexpr aclDataType type = kAclType<T>;
    if (alpha == 1.0f) {
      return AclOp(*acl, "EluGrad")
          .Input(io.inputs[0], bytes, type, io.shape)
          .Input(io.inputs[1], bytes, type, io.shape)
          .Output(io.output, bytes, type, io.shape)
          .Run(stream);
    }
    return WithAlpha(context, *acl, stream, io);
  }

  OrtStatusPtr WithAlpha(OrtKernelContext* context, const AclApi& acl, aclrtStream stream,
                         const ElementwiseIo& io) const {
    constexpr bool is_f32 = kAclType<T> == ACL_FLOAT;
    const size_t n = io.count;
    const size_t f32_bytes = n * sizeof(float);
    const auto& shape = io.shape;
    const std::vector<int64_t> one{1};
    // scratch: t | p | mask | [g32 | a32 | y32]
    const size_t mask_bytes = (n + 31) / 32 * 32;
    const size_t total = 2 * f32_bytes + mask_bytes + (is_f32 ? 0 : 3 * f32_bytes);
    ScratchLease lease;
    ORTOPS_RETURN_IF_ERROR(scratch.Acquire(context, io.memory, acl, stream, total, &lease));
    char* t = lease.data();
    char* p = t + f32_bytes;
    char* mask = p + f32_bytes;
    const void* grads = io.inputs[0];
    const void* activations = io.inputs[1];
    const void* g32 = grads;
    const void* a32 = activations;
    void* y32 = io.output;
    if (!is_f32) {
      char* extra = mask + mask_bytes;
      g32 = extra;
      a32 = extra + f32_bytes;
      y32 = extra + 2 * f32_bytes;
    }
    const size_t in_bytes = n * sizeof(typename T::Storage);
    if (!is_f32) {
      ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Cast")
                                 .Input(grads, in_bytes, kAclType<T>, shape)
                                 .Output(const_cast<void*>(g32), f32_bytes, ACL_FLOAT, shape)
                                 .AttrInt("dst_type", ACL_FLOAT)
                                 .Run(stream));
      ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Cast")
                                 .Input(activations, in_bytes, kAclType<T>, shape)
                                 .Output(const_cast<void*>(a32), f32_bytes, ACL_FLOAT, shape)
                                 .AttrInt("dst_type", ACL_FLOAT)
                                 .Run(stream));
    }
    ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Add")
                               .Input(a32, f32_bytes, ACL_FLOAT, shape)
                               .ConstInput(&alpha, sizeof(float), ACL_FLOAT, one)
                               .Output(t, f32_bytes, ACL_FLOAT, shape)
                               .Run(stream));
    ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Mul")
                               .Input(g32, f32_bytes, ACL_FLOAT, shape)
                               .Input(t, f32_bytes, ACL_FLOAT, shape)
                               .Output(p, f32_bytes, ACL_FLOAT, shape)
                               .Run(stream));
    ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Less")
                               .Input(a32, f32_bytes, ACL_FLOAT, shape)
                               .ConstInput(&zero, sizeof(float), ACL_FLOAT, one)
                               .Output(mask, n, ACL_BOOL, shape)
                               .Run(stream));
    ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Select")
                               .Input(mask, n, ACL_BOOL, shape)
                               .Input(p, f32_bytes, ACL_FLOAT, shape)
                               .Input(g32, f32_bytes, ACL_FLOAT, shape)
                               .Output(y32, f32_bytes, ACL_FLOAT, shape)
                               .Run(stream));
    if (!is_f32) {
      ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Cast")
                                 .Input(y32, f32_bytes, ACL_FLOAT, shape)
                                 .Output(io.output, in_bytes, kAclType<T>, shape)
                                 .AttrInt("dst_type", kAclType<T>)
                                 .Run(stream));
    }
    return nullptr;
  }
};

}  // namespace

const std::vector<OrtCustomOp*>& CannOps() { return FloatOps<Def, CannKernel>(kCannProvider); }

}  // namespace ortops::elu_grad
