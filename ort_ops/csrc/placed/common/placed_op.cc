// Shared parts of the placed ops' kernels.
#include "placed/common/placed_op.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/element_type.h"

namespace ortops::placed {
namespace {

OrtStatusPtr ReadNodeName(const OrtKernelInfo* info, std::string* name) {
  size_t size = 0;
  ORTOPS_RETURN_IF_ERROR(Api().KernelInfo_GetNodeName(info, nullptr, &size));
  std::string text(size, '\0');
  ORTOPS_RETURN_IF_ERROR(Api().KernelInfo_GetNodeName(info, text.data(), &size));
  text.resize(size > 0 ? size - 1 : 0);  // size counts the terminating NUL
  *name = std::move(text);
  return nullptr;
}

}  // namespace

OpList& OpList::Add(const char* name, std::vector<IoSpec> inputs, std::vector<IoSpec> outputs, KernelFactory factory) {
  ops_.push_back(new DeclaredOp(name, kCannProvider, std::move(inputs), std::move(outputs), factory));
  return *this;
}

PlacedKernel::PlacedKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status,
                           std::initializer_list<const char*> acl_ops)
    : name_(op.GetName()) {
  *status = ReadNodeName(info, &node_);
  if (*status == nullptr) *status = cann::AclForKernel(name_, &acl_);
  if (*status == nullptr) *status = cann::RequireOps(*acl_, name_, acl_ops);
}

OrtStatusPtr PlacedKernel::Fail(const std::string& what) const {
  return MakeError(std::string(name_) + " node '" + node_ + "' on CANN: " + what);
}

OrtStatusPtr PlacedKernel::SyncForDeviceFaults(const CannRun& run, const char* acl_op) const {
  const aclError code = run.acl->SynchronizeStream(run.stream);
  if (code == ACL_SUCCESS) return nullptr;
  const char* message = run.acl->GetRecentErrMsg();
  return MakeError(std::string(name_) + " node '" + node_ + "' on CANN: the device failed running CANN " + acl_op +
                       " (or work queued before it on the stream): aclrtSynchronizeStream returned ACL error " +
                       std::to_string(code) + (message != nullptr ? std::string(": ") + message : std::string()),
                   ORT_RUNTIME_EXCEPTION);
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
