// What a simulated kernel sees: the validated inputs/outputs/attributes of one
// aclopCompileAndExecute call, and the kernel table.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
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
  bool is_const = false;  // aclSetTensorConst data (its values are known when the op is enqueued)
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
// computation to run in stream order in `*run`. A run that finds a value it cannot accept (an index
// out of range: only visible on the device) calls device_fault() and returns without writing.
using Run = std::function<void()>;

// Records a device fault (ACL_ERROR_RT_AICORE_EXCEPTION) for the op running on this stream worker;
// the stream's next synchronisation reports the message (the op type is prefixed). The first fault
// of a run is kept. Only valid inside a Run.
void device_fault(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
using Kernel = aclError (*)(const OpCall& call, Run* run);

struct KernelEntry {
  const char* op_type;
  Kernel kernel;  // (which EP or ort_ops kernel sends the op type: docs/cann_ops.md)
};

// The op types of one file of ops/: each ops/<stem>.cc ends with ACLSIM_OPS(<stem>, {"Type",
// kernel}, ...), which defines `OpTable <stem>_ops()`; the registry (op_registry.cc) includes a list
// of the files that CMake generates, so a new op type is one new file.
struct OpTable {
  const KernelEntry* entries;
  size_t count;
};
#define ACLSIM_OPS(stem, ...)                        \
  OpTable stem##_ops() {                             \
    static const KernelEntry kOps[] = {__VA_ARGS__}; \
    return {kOps, sizeof(kOps) / sizeof(kOps[0])};   \
  }

// op_registry.cc: the simulated op types, collected from every ops/*.cc at first use.
const KernelEntry* find_kernel(const std::string& op_type);
std::string kernel_names();  // sorted, comma-separated

// Shared validation helpers (ops_common.cc).
aclError expect_counts(const OpCall& c, size_t n_in, size_t n_out);
aclError expect_same_dtype(const OpCall& c, const char* what_a, const OpTensor& a, const char* what_b,
                           const OpTensor& b);
aclError expect_same_shape(const OpCall& c, const char* what_a, const OpTensor& a, const char* what_b,
                           const OpTensor& b);
// The output's dims equal `want`; a rank-0 `want` also accepts [1] (callers pass scalars as [1],
// like ort_ops' AclOp). Else ACL_ERROR_OP_OUTPUT_NOT_MATCH naming `what` and `why`.
aclError expect_output_shape(const OpCall& c, size_t index, const char* what, const std::vector<int64_t>& want,
                             const char* why);
// dtype of `t` is one of `allowed`, else ACL_ERROR_UNSUPPORTED_DATA_TYPE listing them.
aclError expect_dtype_in(const OpCall& c, const char* what, const OpTensor& t,
                         std::initializer_list<aclDataType> allowed);
// Whether `t` is one of `listed`.
bool dtype_listed(aclDataType t, std::initializer_list<aclDataType> listed);
// An op x (input 0), ... -> y (output 0), ...: `n_in` inputs and `n_out` outputs, x's dtype one of
// `allowed` (as expect_dtype_in), y's x's.
aclError expect_x_to_y(const OpCall& c, size_t n_in, std::initializer_list<aclDataType> allowed, size_t n_out = 1);
// Two inputs and one output of one dtype (one of `allowed`) and one shape, named in errors by
// `names` (e.g. {"input 0 (grads)", "input 1 (activations)", "output 0 (y)"}).
aclError expect_same_binary(const OpCall& c, const char* const (&names)[3], std::initializer_list<aclDataType> allowed);
// ACL_ERROR_OP_INPUT_NOT_MATCH: a pooling op's input 0 (x) leaves no window for its kernel and strides.
aclError no_output_window(const OpCall& c, const OpTensor& x, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                          const std::string& mode);
// `t` holds one element ([1] or []), else ACL_ERROR_OP_INPUT_NOT_MATCH.
aclError expect_one_element(const OpCall& c, const char* what, const OpTensor& t);
// The values of a 1-D int32/int64 input. `need_const`: it must be an aclSetTensorConst input (its
// values are read now); otherwise (device memory) *values is left empty and *known is false.
aclError read_index_list(const OpCall& c, size_t index, const char* what, bool need_const, std::vector<int64_t>* values,
                         bool* known);
// Reads the int32/int64 element `i` of `t` (memcpy, any alignment).
int64_t index_at(const OpTensor& t, int64_t i);
// Row-major strides (in elements) of `dims`.
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims);
// "[1,2]" for the row-major multi-index of flat position `flat` in `dims`.
std::string index_str(int64_t flat, const std::vector<int64_t>& dims);
// numpy broadcasting of a and b; false if not broadcastable.
bool broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out);
// Strides (in elements) of `in` broadcast to `out` (0 on broadcast dims), aligned right.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out);

}  // namespace aclsim
