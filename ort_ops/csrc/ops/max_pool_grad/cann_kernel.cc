// MaxPoolGrad on the CANN EP: CANN's MaxPoolGrad single op (x1 = X, x2 = Y, grad = dY; ksize and
// strides [1, 1, kh, kw], data_format "NCHW") on the session's stream. CANN's op takes TensorFlow's
// padding modes only: "VALID" when the pads are all 0, "SAME" when they are exactly TensorFlow's SAME
// pads for the run's H and W; other pads fail the run naming both (the CPU kernel takes any pads).
// The op's availability on the SoC is checked at kernel creation. Empty tensors launch nothing.
// Written on the CANN kernel skeleton (cann/sequence_kernel.h): one op, no scratch.
#include "cann/sequence_kernel.h"
#include "ops/max_pool_grad/max_pool_grad.h"

namespace ortops::max_pool_grad {
namespace {

// TensorFlow's SAME padding of one axis: (before, after).
void SamePads(int64_t size, int64_t kernel, int64_t stride, int64_t* before, int64_t* after) {
  const int64_t out = (size + stride - 1) / stride;
  const int64_t needed = (out - 1) * stride + kernel - size;
  const int64_t total = needed > 0 ? needed : 0;
  *before = total / 2;
  *after = total - *before;
}

// CANN's padding mode for this run's shape, or an error naming the pads, the shape and SAME's pads.
OrtStatusPtr PaddingMode(const Attributes& a, const Run& run, const char** mode) {
  if (a.top == 0 && a.left == 0 && a.bottom == 0 && a.right == 0) {
    *mode = "VALID";
    return nullptr;
  }
  int64_t top = 0, bottom = 0, left = 0, right = 0;
  SamePads(run.h, a.kh, a.sh, &top, &bottom);
  SamePads(run.w, a.kw, a.sw, &left, &right);
  if (a.top == top && a.bottom == bottom && a.left == left && a.right == right) {
    *mode = "SAME";
    return nullptr;
  }
  return MakeError(std::string(kName) + " on CANN: pads " + ShapeText({a.top, a.left, a.bottom, a.right}) + " for X " +
                       ShapeText(run.x.shape) + " are neither 0 (VALID) nor TensorFlow's SAME pads for this shape " +
                       ShapeText({top, left, bottom, right}) +
                       ": CANN's MaxPoolGrad has no other padding (the CPU kernel takes any pads)",
                   ORT_NOT_IMPLEMENTED);
}

template <typename T>
class CannKernel : public Kernel {
 public:
  CannKernel(const OrtKernelInfo* info, const DeclaredOp&, OrtStatusPtr* status) {
    *status = ReadAttributes(info, &attributes_);
    const cann::AclApi* acl = nullptr;
    if (*status == nullptr) *status = cann::KernelAcl(kName, {"MaxPoolGrad"}, &acl);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    Run run;
    ORTOPS_RETURN_IF_ERROR(GetInputs(context, attributes_, &run));
    void* dx = nullptr;
    ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 0, run.x.shape, &dx));
    if (run.x.count == 0) return nullptr;  // CANN rejects empty tensors; the result is empty anyway
    const char* padding = nullptr;
    ORTOPS_RETURN_IF_ERROR(PaddingMode(attributes_, run, &padding));
    cann::SequenceRun cann;
    ORTOPS_RETURN_IF_ERROR(cann::SequenceRun::Begin(context, kName, &cann));
    constexpr aclDataType type = cann::kAclType<T>;
    const size_t element = sizeof(typename T::Storage);
    const Attributes& a = attributes_;
    return cann.Op("MaxPoolGrad")
        .Input(run.x.data, run.x.count * element, type, run.x.shape, ACL_FORMAT_NCHW)
        .Input(run.y.data, run.y.count * element, type, run.y.shape, ACL_FORMAT_NCHW)
        .Input(run.dy.data, run.dy.count * element, type, run.dy.shape, ACL_FORMAT_NCHW)
        .Output(dx, run.x.count * element, type, run.x.shape, ACL_FORMAT_NCHW)
        .AttrInts("ksize", {1, 1, a.kh, a.kw})
        .AttrInts("strides", {1, 1, a.sh, a.sw})
        .AttrString("padding", padding)
        .AttrString("data_format", "NCHW")
        .Run(cann.stream);
  }

 private:
  Attributes attributes_;
};

}  // namespace

void RegisterCann(OpList& list) { list.AddDeclared<Declaration, CannKernel>(); }

}  // namespace ortops::max_pool_grad
