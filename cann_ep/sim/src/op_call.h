// What a simulated kernel sees: the validated inputs/outputs/attributes of one
// aclopCompileAndExecute call, and the kernel table.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "internal.h"
#include "tensor.h"

namespace aclsim {

struct OpTensor {
  aclDataType dtype = ACL_DT_UNDEFINED;
  aclFormat format = ACL_FORMAT_ND;  // as given to aclCreateTensorDesc
  // An omitted optional input: the ACL convention is a descriptor with ACL_DT_UNDEFINED and
  // no dims (e.g. the EP's Conv without bias); its buffer is ignored.
  bool absent = false;
  std::vector<int64_t> dims;
  int64_t numel = 1;
  void* data = nullptr;                                // device or host pointer, or staged copy
  std::shared_ptr<std::vector<unsigned char>> staged;  // owns host/const input bytes
  size_t bytes = 0;                                    // numel * dtype size
};

struct OpCall {
  std::string type;
  std::vector<OpTensor> in, out;
  std::map<std::string, aclopAttr::Value> attrs;

  bool has_attr(const char* name) const { return attrs.count(name) != 0; }
  int64_t attr_int(const char* name, int64_t def) const {
    auto it = attrs.find(name);
    return it == attrs.end()                             ? def
           : it->second.kind == aclopAttr::Value::kFloat ? static_cast<int64_t>(it->second.f)
                                                         : it->second.i;
  }
  float attr_float(const char* name, float def) const {
    auto it = attrs.find(name);
    return it == attrs.end()                             ? def
           : it->second.kind == aclopAttr::Value::kFloat ? it->second.f
                                                         : static_cast<float>(it->second.i);
  }
  std::string attr_string(const char* name, const char* def) const {
    auto it = attrs.find(name);
    return it == attrs.end() || it->second.kind != aclopAttr::Value::kString ? std::string(def) : it->second.s;
  }
  std::vector<int64_t> attr_list(const char* name) const {
    auto it = attrs.find(name);
    return it == attrs.end() ? std::vector<int64_t>{} : it->second.list;
  }
};

// A kernel validates `call` synchronously (returning an error through fail(), with a
// message naming the input, the expected and the actual value) and on success stores the
// computation to run in stream order in `*run`.
using Run = std::function<void()>;
using Kernel = aclError (*)(const OpCall& call, Run* run);

struct KernelEntry {
  const char* op_type;
  Kernel kernel;
  const char* sent_by;  // which ORT CANN EP kernel sends this op type
};

// op_registry.cc: the single table of simulated op types.
const KernelEntry* find_kernel(const std::string& op_type);
std::string kernel_names();

// Shared validation helpers (ops_common.cc).
aclError expect_counts(const OpCall& c, size_t n_in, size_t n_out);
aclError expect_same_dtype(const OpCall& c, const char* what_a, const OpTensor& a, const char* what_b,
                           const OpTensor& b);
aclError expect_same_shape(const OpCall& c, const char* what_a, const OpTensor& a, const char* what_b,
                           const OpTensor& b);
// numpy broadcasting of a and b; false if not broadcastable.
bool broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out);
// Strides (in elements) of `in` broadcast to `out` (0 on broadcast dims), aligned right.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out);

}  // namespace aclsim
