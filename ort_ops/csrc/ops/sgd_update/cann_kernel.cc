// SGDUpdate on the CANN EP, through CANN's own ops on the session's stream (docs/ops/SGDUpdate.md):
//   weight_decay != 0: g = Axpy(grad, param, alpha = weight_decay)            (grad + wd * param)
//   momentum != 0, dampening == 0: ApplyMomentum, in place on the outputs (new_param and
//     new_momentum_buffer are device copies of param and momentum_buffer first): accum =
//     accum * momentum + g; var -= lr * accum (Nesterov: var -= g * lr + accum * momentum * lr).
//     lr is scalars[0] on the device; momentum the attribute, a constant input. A zero buffer
//     makes the first step buf = g, as PyTorch's, without the per-step scalars.
//   otherwise (momentum == 0, or dampening != 0): elementwise ops that broadcast the [1] scalars
//     themselves: buf = Add(Mul(momentum_buffer, scalars[1]), Mul(g, scalars[2]));
//     new_param = Sub(param, Mul(buf or g, scalars[0])) — bit for bit the CPU kernel.
// Scalars never leave the device; intermediates live in per-stream scratch (stream_scratch.h).
// The CANN ops a node launches are checked against the SoC when its kernel is created.
#include <string>

#include "cann/acl_op.h"
#include "cann/cann_run.h"
#include "cann/soc.h"
#include "cann/stream_scratch.h"
#include "common/op_base.h"
#include "ops/sgd_update/sgd_update.h"

namespace ortops::sgd_update {
namespace {

using cann::AclOp;
using cann::CannRun;
using cann::ScratchLease;

using cann::ScratchAligned;

class CannKernel : public Kernel {
 public:
  CannKernel(const OrtKernelInfo* info, const DeclaredOp&, OrtStatusPtr* status) {
    *status = ReadAttributes(info, &a_);
    if (*status != nullptr) return;
    apply_momentum_ = a_.momentum != 0.0f && a_.dampening == 0.0f;
    *status = cann::AclForKernel(kName, &acl_);
    if (*status != nullptr) return;
    if (apply_momentum_) {
      *status = cann::RequireOps(*acl_, kName, {"ApplyMomentum"});
    } else {
      *status = cann::RequireOps(*acl_, kName, {"Mul", "Sub"});
      if (*status == nullptr && a_.momentum != 0.0f) *status = cann::RequireOps(*acl_, kName, {"Add"});
    }
    if (*status == nullptr && a_.weight_decay != 0.0f) *status = cann::RequireOps(*acl_, kName, {"Axpy"});
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    Io io;
    ORTOPS_RETURN_IF_ERROR(PrepareIo(context, a_, &io));
    if (io.count == 0) return nullptr;  // CANN rejects empty tensors; the outputs are empty anyway
    CannRun run;
    ORTOPS_RETURN_IF_ERROR(CannRun::Begin(context, kName, &run));
    const std::vector<int64_t>& shape = io.param.shape;
    const size_t bytes = io.count * sizeof(float);
    const bool decay = a_.weight_decay != 0.0f;
    // scratch: [decayed grad] | elementwise route: step | [buf * scalars[1] | g * scalars[2]]
    const size_t slot = ScratchAligned(bytes);
    const size_t route = apply_momentum_ ? 0 : a_.momentum != 0.0f ? 3 : 1;
    const size_t total = (decay ? slot : 0) + route * slot;
    ScratchLease lease;
    if (total != 0)
      ORTOPS_RETURN_IF_ERROR(scratch_.Acquire(context, io.param.memory, *run.acl, run.stream, total, &lease));
    char* free = lease.data();
    const void* g = io.grad.data;
    if (decay) {
      void* decayed = free;
      free += slot;
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "Axpy")
                                 .Input(g, bytes, ACL_FLOAT, shape)
                                 .Input(io.param.data, bytes, ACL_FLOAT, shape)
                                 .Output(decayed, bytes, ACL_FLOAT, shape)
                                 .AttrFloat("alpha", a_.weight_decay)
                                 .Run(run.stream));
      g = decayed;
    }
    const char* scalars = static_cast<const char*>(io.scalars.data);
    const void* lr = scalars;
    const std::vector<int64_t> one{1};
    if (apply_momentum_) {
      ORTOPS_RETURN_IF_ERROR(run.CopyOnDevice(io.new_param, io.param.data, bytes));
      ORTOPS_RETURN_IF_ERROR(run.CopyOnDevice(io.new_buffer, io.buffer.data, bytes));
      return AclOp(*run.acl, "ApplyMomentum")
          .Input(io.new_param, bytes, ACL_FLOAT, shape)
          .Input(io.new_buffer, bytes, ACL_FLOAT, shape)
          .Input(lr, sizeof(float), ACL_FLOAT, one)
          .Input(g, bytes, ACL_FLOAT, shape)
          .ConstInput(&a_.momentum, sizeof(float), ACL_FLOAT, one)
          .Output(io.new_param, bytes, ACL_FLOAT, shape)
          .AttrBool("use_nesterov", a_.nesterov)
          .AttrBool("use_locking", false)
          .Run(run.stream);
    }
    char* step = free;
    char* decayed_momentum = free + slot;
    char* scaled_grad = free + 2 * slot;
    const void* direction = g;
    if (a_.momentum != 0.0f) {  // (dampening != 0 here; Nesterov needs dampening 0: ApplyMomentum)
      ORTOPS_RETURN_IF_ERROR(
          Binary("Mul", run, io.buffer.data, scalars + sizeof(float), decayed_momentum, shape, bytes));
      ORTOPS_RETURN_IF_ERROR(Binary("Mul", run, g, scalars + 2 * sizeof(float), scaled_grad, shape, bytes));
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "Add")
                                 .Input(decayed_momentum, bytes, ACL_FLOAT, shape)
                                 .Input(scaled_grad, bytes, ACL_FLOAT, shape)
                                 .Output(io.new_buffer, bytes, ACL_FLOAT, shape)
                                 .Run(run.stream));
      direction = io.new_buffer;
    }
    ORTOPS_RETURN_IF_ERROR(Binary("Mul", run, direction, lr, step, shape, bytes));
    return AclOp(*run.acl, "Sub")
        .Input(io.param.data, bytes, ACL_FLOAT, shape)
        .Input(step, bytes, ACL_FLOAT, shape)
        .Output(io.new_param, bytes, ACL_FLOAT, shape)
        .Run(run.stream);
  }

 private:
  // y = x (shape) `op` s ([1], device memory): CANN broadcasts the scalar itself.
  static OrtStatusPtr Binary(const char* op, const CannRun& run, const void* x, const void* s, void* y,
                             const std::vector<int64_t>& shape, size_t bytes) {
    return AclOp(*run.acl, op)
        .Input(x, bytes, ACL_FLOAT, shape)
        .Input(s, sizeof(float), ACL_FLOAT, {1})
        .Output(y, bytes, ACL_FLOAT, shape)
        .Run(run.stream);
  }

  Attributes a_;
  bool apply_momentum_ = false;
  const cann::AclApi* acl_ = nullptr;
  mutable cann::ScratchUser scratch_;
};

}  // namespace

void RegisterCann(OpList& list) { list.AddDeclared<Declaration, CannKernel>(); }

}  // namespace ortops::sgd_update
