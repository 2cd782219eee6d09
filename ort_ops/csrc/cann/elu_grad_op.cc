// EluGrad on the CANN EP, through CANN single ops on the session's stream:
//   alpha == 1: CANN's own EluGrad operator (fp32 math, strict <, select, one RNE cast);
//   alpha != 1: CANN's EluGrad has no alpha, so the same math as single ops in float32:
//     [Cast g, a -> float32]; t = Add(a, [alpha]); p = Mul(g, t); m = Less(a, [0]);
//     y = Select(m, p, g); [Cast y -> T]  — identical semantics and rounding to the reference.
// The scalars 0 and alpha are constant inputs (aclSetTensorConst): no host-to-device copy. The
// float32 intermediates live in per-stream scratch (stream_scratch.h), valid until the ops that
// use them have run, whatever the number of concurrent runs and streams.
// Empty tensors launch nothing. ACL is loaded lazily (see acl_api.h).
#include "cann/elu_grad_op.h"

#include <string>

#include "cann/acl_api.h"
#include "cann/acl_op.h"
#include "cann/stream_scratch.h"
#include "common/elu_grad_op_base.h"

namespace ortops::cann {
namespace {

constexpr const char* kProvider = "CANNExecutionProvider";

template <typename T>
constexpr aclDataType kAclType = ACL_FLOAT;
template <>
constexpr aclDataType kAclType<Float16> = ACL_FLOAT16;
template <>
constexpr aclDataType kAclType<BFloat16> = ACL_BF16;

template <typename T>
struct Kernel {
  explicit Kernel(float alpha_value) : alpha(alpha_value) {}
  const float zero = 0.0f;
  const float alpha;
  mutable ScratchUser scratch;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const {
    EluGradIo io;
    ORTOPS_RETURN_IF_ERROR(PrepareEluGrad(context, T::kOnnxType, &io));
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
          .Input(io.grads, bytes, type, io.shape)
          .Input(io.activations, bytes, type, io.shape)
          .Output(io.y, bytes, type, io.shape)
          .Run(stream);
    }
    return WithAlpha(context, *acl, stream, io);
  }

  OrtStatusPtr WithAlpha(OrtKernelContext* context, const AclApi& acl, aclrtStream stream,
                         const EluGradIo& io) const {
    constexpr bool is_f32 = kAclType<T> == ACL_FLOAT;
    const size_t n = io.count;
    const size_t f32_bytes = n * sizeof(float);
    const auto& shape = io.shape;
    const std::vector<int64_t> one{1};
    // scratch: t | p | mask | [g32 | a32 | y32]
    const size_t mask_bytes = (n + 31) / 32 * 32;
    const size_t total = 2 * f32_bytes + mask_bytes + (is_f32 ? 0 : 3 * f32_bytes);
    const OrtValue* grads_value = nullptr;
    ORTOPS_RETURN_IF_ERROR(Api().KernelContext_GetInput(context, 0, &grads_value));
    const OrtMemoryInfo* device = nullptr;
    ORTOPS_RETURN_IF_ERROR(Api().GetTensorMemoryInfo(grads_value, &device));
    ScratchLease lease;
    ORTOPS_RETURN_IF_ERROR(scratch.Acquire(context, device, acl, stream, total, &lease));
    char* t = lease.data();
    char* p = t + f32_bytes;
    char* mask = p + f32_bytes;
    const void* g32 = io.grads;
    const void* a32 = io.activations;
    void* y32 = io.y;
    if (!is_f32) {
      char* extra = mask + mask_bytes;
      g32 = extra;
      a32 = extra + f32_bytes;
      y32 = extra + 2 * f32_bytes;
    }
    const size_t in_bytes = n * sizeof(typename T::Storage);
    if (!is_f32) {
      ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Cast").Input(io.grads, in_bytes, kAclType<T>, shape)
                                 .Output(const_cast<void*>(g32), f32_bytes, ACL_FLOAT, shape)
                                 .AttrInt("dst_type", ACL_FLOAT).Run(stream));
      ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Cast").Input(io.activations, in_bytes, kAclType<T>, shape)
                                 .Output(const_cast<void*>(a32), f32_bytes, ACL_FLOAT, shape)
                                 .AttrInt("dst_type", ACL_FLOAT).Run(stream));
    }
    ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Add").Input(a32, f32_bytes, ACL_FLOAT, shape)
                               .ConstInput(&alpha, sizeof(float), ACL_FLOAT, one)
                               .Output(t, f32_bytes, ACL_FLOAT, shape).Run(stream));
    ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Mul").Input(g32, f32_bytes, ACL_FLOAT, shape)
                               .Input(t, f32_bytes, ACL_FLOAT, shape)
                               .Output(p, f32_bytes, ACL_FLOAT, shape).Run(stream));
    ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Less").Input(a32, f32_bytes, ACL_FLOAT, shape)
                               .ConstInput(&zero, sizeof(float), ACL_FLOAT, one)
                               .Output(mask, n, ACL_BOOL, shape).Run(stream));
    ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Select").Input(mask, n, ACL_BOOL, shape)
                               .Input(p, f32_bytes, ACL_FLOAT, shape)
                               .Input(g32, f32_bytes, ACL_FLOAT, shape)
                               .Output(y32, f32_bytes, ACL_FLOAT, shape).Run(stream));
    if (!is_f32) {
      ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Cast").Input(y32, f32_bytes, ACL_FLOAT, shape)
                                 .Output(io.y, in_bytes, kAclType<T>, shape)
                                 .AttrInt("dst_type", kAclType<T>).Run(stream));
    }
    return nullptr;
  }
};

}  // namespace

const std::vector<const OrtCustomOp*>& Ops() {
  return EluGradOps<Kernel>(kProvider);
}

}  // namespace ortops::cann
