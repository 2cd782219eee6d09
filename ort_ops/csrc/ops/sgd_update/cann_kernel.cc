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
// Scalars never leave the device; intermediates live in the run's scratch lease (written on the
// CANN kernel skeleton, cann/sequence_kernel.h).
// The CANN ops a node launches are checked against the SoC when its kernel is created.
#include <vector>

#include "cann/sequence_kernel.h"
#include "cann/soc.h"
#include "common/op_base.h"
#include "ops/sgd_update/sgd_update.h"

namespace ortops::sgd_update {
namespace {

using cann::ScratchAligned;
using cann::SequenceRun;

class CannKernel : public Kernel {
 public:
  CannKernel(const OrtKernelInfo* info, const DeclaredOp&, OrtStatusPtr* status) { *status = Init(info); }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    return cann::RunSequence<Io>(*this, context, kName, [&](Io* io) { return PrepareIo(context, a_, io); });
  }

  // RunSequence's step: io is not empty.
  OrtStatusPtr Run(OrtKernelContext* context, const Io& io, SequenceRun& run) const {
    const std::vector<int64_t>& shape = io.param.shape;
    const size_t bytes = io.count * sizeof(float);
    // scratch: [decayed grad] | elementwise route: step | [buf * scalars[1] | g * scalars[2]]
    const size_t slot = ScratchAligned(bytes);
    const size_t route = apply_momentum_ ? 0 : a_.momentum != 0.0f ? 3 : 1;
    const size_t decay_slot = a_.weight_decay != 0.0f ? slot : 0;
    ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, io.param.memory, decay_slot + route * slot));
    const void* g = io.grad.data;
    if (decay_slot != 0) {
      ORTOPS_RETURN_IF_ERROR(run.Axpy(g, io.param.data, a_.weight_decay, run.Scratch(0), shape));
      g = run.Scratch(0);
    }
    const char* scalars = static_cast<const char*>(io.scalars.data);
    const void* lr = scalars;
    const std::vector<int64_t> one{1};
    if (apply_momentum_) {
      ORTOPS_RETURN_IF_ERROR(run.CopyOnDevice(io.new_param, io.param.data, bytes));
      ORTOPS_RETURN_IF_ERROR(run.CopyOnDevice(io.new_buffer, io.buffer.data, bytes));
      return run.Op("ApplyMomentum")
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
    char* step = run.Scratch(decay_slot);
    char* decayed_momentum = step + slot;
    char* scaled_grad = step + 2 * slot;
    const void* direction = g;
    if (a_.momentum != 0.0f) {  // (dampening != 0 here; Nesterov needs dampening 0: ApplyMomentum)
      ORTOPS_RETURN_IF_ERROR(Scale(run, io.buffer.data, scalars + sizeof(float), decayed_momentum, shape, bytes));
      ORTOPS_RETURN_IF_ERROR(Scale(run, g, scalars + 2 * sizeof(float), scaled_grad, shape, bytes));
      ORTOPS_RETURN_IF_ERROR(run.Op("Add")
                                 .Input(decayed_momentum, bytes, ACL_FLOAT, shape)
                                 .Input(scaled_grad, bytes, ACL_FLOAT, shape)
                                 .Output(io.new_buffer, bytes, ACL_FLOAT, shape)
                                 .Run(run.stream));
      direction = io.new_buffer;
    }
    ORTOPS_RETURN_IF_ERROR(Scale(run, direction, lr, step, shape, bytes));
    return run.Op("Sub")
        .Input(io.param.data, bytes, ACL_FLOAT, shape)
        .Input(step, bytes, ACL_FLOAT, shape)
        .Output(io.new_param, bytes, ACL_FLOAT, shape)
        .Run(run.stream);
  }

 private:
  // The attributes, the route, and the CANN ops the node will launch on this SoC.
  OrtStatusPtr Init(const OrtKernelInfo* info) {
    ORTOPS_RETURN_IF_ERROR(ReadAttributes(info, &a_));
    apply_momentum_ = a_.momentum != 0.0f && a_.dampening == 0.0f;
    const cann::AclApi* acl = nullptr;
    if (apply_momentum_) {
      ORTOPS_RETURN_IF_ERROR(cann::KernelAcl(kName, {"ApplyMomentum"}, &acl));
    } else {
      ORTOPS_RETURN_IF_ERROR(cann::KernelAcl(kName, {"Mul", "Sub"}, &acl));
      if (a_.momentum != 0.0f) ORTOPS_RETURN_IF_ERROR(cann::RequireOps(*acl, kName, {"Add"}));
    }
    return a_.weight_decay != 0.0f ? cann::RequireOps(*acl, kName, {"Axpy"}) : nullptr;
  }

  // y = x (shape) * s ([1], device memory): CANN broadcasts the scalar itself.
  static OrtStatusPtr Scale(const SequenceRun& run, const void* x, const void* s, void* y,
                            const std::vector<int64_t>& shape, size_t bytes) {
    return run.Op("Mul")
        .Input(x, bytes, ACL_FLOAT, shape)
        .Input(s, sizeof(float), ACL_FLOAT, {1})
        .Output(y, bytes, ACL_FLOAT, shape)
        .Run(run.stream);
  }

  Attributes a_;
  bool apply_momentum_ = false;
  mutable cann::ScratchUser scratch_;
};

}  // namespace

void RegisterCann(OpList& list) { list.AddDeclared<Declaration, CannKernel>(); }

}  // namespace ortops::sgd_update
