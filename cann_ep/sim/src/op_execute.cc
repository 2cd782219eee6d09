// aclopCompileAndExecute: validates the call, checks the op type against the SoC support matrix
// (soc.cc), builds an OpCall, lets the kernel for the op type check it, and enqueues the
// computation on the stream. A kernel that faults while it runs (device_fault) makes the stream's
// next synchronisation fail with ACL_ERROR_RT_AICORE_EXCEPTION.
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>

#include <acl/acl_op_compiler.h>

#include "injection.h"
#include "op_call.h"

namespace aclsim {
namespace {

// The fault message of the op running on this stream worker (set only while its Run executes).
thread_local std::string* t_fault = nullptr;

std::string tensor_str(const aclTensorDesc* d, const aclDataBuffer* b) {
  if (d == nullptr) return "NULL";
  if (d->dtype == ACL_DT_UNDEFINED && d->dims.empty()) return "(absent)";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "@%p/%zu", b ? b->data : nullptr, b ? b->size : 0);
  std::string fmt = d->format == ACL_FORMAT_NCHW ? "{NCHW}" : d->format == ACL_FORMAT_NHWC ? "{NHWC}" : "";
  return std::string(dtype_name(d->dtype)) + shape_str(d->dims) + fmt + (d->is_const ? "(const)" : "") + buf;
}

std::string attrs_str(const aclopAttr* a) {
  if (a == nullptr) return "NULL";
  std::string s = "{";
  bool first = true;
  for (auto& kv : a->values) {
    s += (first ? "" : ", ") + kv.first + "=";
    first = false;
    const auto& v = kv.second;
    switch (v.kind) {
      case aclopAttr::Value::kBool: s += v.i ? "true" : "false"; break;
      case aclopAttr::Value::kInt: s += std::to_string(v.i); break;
      case aclopAttr::Value::kFloat: {
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v.f));
        s += buf;
        break;
      }
      case aclopAttr::Value::kString: s += "\"" + v.s + "\""; break;
      case aclopAttr::Value::kListInt: s += shape_str(v.list); break;
    }
  }
  return s + "}";
}

aclError build_tensor(const char* op, const char* role, int i, const aclTensorDesc* d, const aclDataBuffer* b,
                      bool is_input, OpTensor* t) {
  if (d == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "%s: %s %d: tensor descriptor is NULL", op, role, i);
  t->dtype = d->dtype;
  t->format = d->format;
  t->dims = d->dims;
  if (is_input && d->dtype == ACL_DT_UNDEFINED && d->dims.empty() && !d->is_const) {
    t->absent = true;  // omitted optional input; kernels that take none reject it by dtype
    t->numel = 0;
    return ACL_SUCCESS;
  }
  t->numel = 1;
  for (int64_t dim : d->dims) {
    if (dim < 0)
      return fail(ACL_ERROR_OP_UNSUPPORTED_DYNAMIC, "%s: %s %d: dynamic shape %s is not supported", op, role, i,
                  shape_str(d->dims).c_str());
    t->numel *= dim;
  }
  size_t esize = dtype_size(d->dtype);
  if (esize == 0)
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "%s: %s %d: dtype %s (%d) is not supported", op, role, i,
                dtype_name(d->dtype), static_cast<int>(d->dtype));
  t->bytes = static_cast<size_t>(t->numel) * esize;
  if (is_input && d->is_const) {
    t->is_const = true;
    if (d->const_data.size() < t->bytes)
      return fail(ACL_ERROR_INVALID_PARAM, "%s: %s %d: const data has %zu bytes, descriptor %s %s needs %zu", op, role,
                  i, d->const_data.size(), dtype_name(d->dtype), shape_str(d->dims).c_str(), t->bytes);
    t->staged = std::make_shared<std::vector<unsigned char>>(d->const_data);
    t->data = t->staged->data();
    return ACL_SUCCESS;
  }
  if (b == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "%s: %s %d: data buffer is NULL", op, role, i);
  if (b->size < t->bytes)
    return fail(ACL_ERROR_INVALID_PARAM, "%s: %s %d: data buffer has %zu bytes, descriptor %s %s needs %zu", op, role,
                i, b->size, dtype_name(d->dtype), shape_str(d->dims).c_str(), t->bytes);
  if (t->bytes > 0 && b->data == nullptr)
    return fail(ACL_ERROR_INVALID_PARAM, "%s: %s %d: data address is NULL", op, role, i);
  t->data = b->data;
  if (t->bytes == 0) return ACL_SUCCESS;
  std::string what = std::string(op) + " " + role + " " + std::to_string(i);
  MemRange r;
  if (aclError rc = classify(b->data, t->bytes, what.c_str(), &r)) return rc;
  if (is_input && r.kind == MemKind::kHost) {
    // Host input (e.g. the EP's Gemm alpha/beta): snapshot it now.
    const unsigned char* p = static_cast<const unsigned char*>(b->data);
    t->staged = std::make_shared<std::vector<unsigned char>>(p, p + t->bytes);
    t->data = t->staged->data();
  }
  return ACL_SUCCESS;
}

aclError execute(const char* opType, int numInputs, const aclTensorDesc* const inputDesc[],
                 const aclDataBuffer* const inputs[], int numOutputs, const aclTensorDesc* const outputDesc[],
                 aclDataBuffer* const outputs[], const aclopAttr* attr, aclrtStream stream) {
  if (opType == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclopCompileAndExecute: opType is NULL");
  if (numInputs < 0 || numOutputs < 0 || (numInputs > 0 && (inputDesc == nullptr || inputs == nullptr)) ||
      (numOutputs > 0 && (outputDesc == nullptr || outputs == nullptr)))
    return fail(ACL_ERROR_INVALID_PARAM, "%s: invalid input/output arrays (numInputs=%d, numOutputs=%d)", opType,
                numInputs, numOutputs);
  if (!initialized()) return fail(ACL_ERROR_UNINITIALIZE, "%s: aclInit has not been called", opType);
  if (!stream_valid(stream))
    return fail(ACL_ERROR_INVALID_PARAM, "%s: stream %p was not created by aclrtCreateStream", opType, stream);
  aclError injected;
  std::string source;
  if (take_injected_failure(opType, &injected, &source))
    return fail(injected, "%s: injected failure (%s)", opType, source.c_str());
  const std::string unavailable = soc_op_unavailable(opType);
  if (!unavailable.empty()) return fail_msg(ACL_ERROR_OP_NOT_FOUND, unavailable);
  const KernelEntry* k = find_kernel(opType);
  if (k == nullptr)
    return fail(ACL_ERROR_OP_NOT_FOUND, "op type \"%s\" is not implemented by the ACL simulator (implemented: %s)",
                opType, kernel_names().c_str());
  auto call = std::make_shared<OpCall>();
  call->type = opType;
  call->in.resize(numInputs);
  call->out.resize(numOutputs);
  for (int i = 0; i < numInputs; ++i)
    if (aclError rc = build_tensor(opType, "input", i, inputDesc[i], inputs[i], true, &call->in[i])) return rc;
  for (int i = 0; i < numOutputs; ++i)
    if (aclError rc = build_tensor(opType, "output", i, outputDesc[i], outputs[i], false, &call->out[i])) return rc;
  if (attr != nullptr) call->attrs = attr->values;
  Run run;
  if (aclError rc = k->kernel(*call, &run)) return rc;
  std::string fault_source;
  const bool inject_fault = take_injected_fault(opType, &fault_source);
  stat_add(kOpsLaunched, 1);
  return enqueue(stream, std::string("op ") + opType, [run, call, inject_fault, fault_source] {
    std::string fault;
    if (inject_fault) {
      fault = "injected device fault (" + fault_source + ")";
    } else if (run) {
      t_fault = &fault;
      run();
      t_fault = nullptr;
    }
    stat_add(kOpsExecuted, 1);
    stat_op_executed(call->type.c_str());
    if (fault.empty()) return TaskResult{};
    stat_add(kDeviceFaults, 1);
    return TaskResult{ACL_ERROR_RT_AICORE_EXCEPTION, "AI Core exception in " + call->type + ": " + fault};
  });
}

}  // namespace

void device_fault(const char* fmt, ...) {
  if (t_fault == nullptr || !t_fault->empty()) return;  // keep the first fault of the run
  va_list ap;
  va_start(ap, fmt);
  char buf[1024];
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  *t_fault = buf;
}

}  // namespace aclsim

extern "C" ACL_FUNC_VISIBILITY aclError aclopCompileAndExecute(
    const char* opType, int numInputs, const aclTensorDesc* const inputDesc[], const aclDataBuffer* const inputs[],
    int numOutputs, const aclTensorDesc* const outputDesc[], aclDataBuffer* const outputs[], const aclopAttr* attr,
    aclopEngineType engineType, aclopCompileType compileFlag, const char* opPath, aclrtStream stream) {
  aclError rc = aclsim::execute(opType, numInputs, inputDesc, inputs, numOutputs, outputDesc, outputs, attr, stream);
  if (aclsim::trace_on()) {
    std::string ins, outs;
    for (int i = 0; i < numInputs && inputDesc && inputs; ++i)
      ins += (i ? ", " : "") + aclsim::tensor_str(inputDesc[i], inputs[i]);
    for (int i = 0; i < numOutputs && outputDesc && outputs; ++i)
      outs += (i ? ", " : "") + aclsim::tensor_str(outputDesc[i], outputs[i]);
    aclsim::trace(
        "aclopCompileAndExecute(opType=%s, inputs=[%s], outputs=[%s], attr=%s, engineType=%d, "
        "compileFlag=%d, opPath=%s, stream=%p) = %d",
        opType ? opType : "NULL", ins.c_str(), outs.c_str(), aclsim::attrs_str(attr).c_str(),
        static_cast<int>(engineType), static_cast<int>(compileFlag), opPath ? opPath : "NULL", stream, rc);
  }
  return rc;
}
