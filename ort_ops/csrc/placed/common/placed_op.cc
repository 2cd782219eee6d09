// Shared parts of the placed ops' kernels.
#include "placed/common/placed_op.h"

#include <algorithm>
#include <string>

#include "common/element_type.h"

namespace ortops::placed {

PlacedKernel::PlacedKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status,
                           std::initializer_list<const char*> acl_ops)
    : name_(op.GetName()) {
  *status = cann::KernelNodeName(info, &node_);
  if (*status == nullptr) *status = cann::AclForKernel(name_, &acl_);
  if (*status == nullptr) *status = cann::RequireOps(*acl_, name_, acl_ops);
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

bool NormalizeAxis(int64_t axis, size_t rank, int64_t* out) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return false;
  *out = axis < 0 ? axis + r : axis;
  return true;
}

}  // namespace ortops::placed
