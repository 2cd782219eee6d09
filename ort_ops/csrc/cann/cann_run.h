// What a CANN kernel needs for one run: the ACL functions, the session's stream, and helpers for
// the work it enqueues on that stream (device-to-device copies, zero fills).
#pragma once

#include <string>

#include "cann/acl_api.h"
#include "common/ort_api.h"

namespace ortops::cann {

struct CannRun {
  const AclApi* acl = nullptr;
  aclrtStream stream = nullptr;

  // The ACL functions and the kernel context's stream; an error naming `op` if ACL is missing.
  static OrtStatusPtr Begin(OrtKernelContext* context, const char* op, CannRun* run);
  // Enqueues a device-to-device copy of `bytes` (nothing for 0).
  OrtStatusPtr CopyOnDevice(void* dst, const void* src, size_t bytes) const;
  // Enqueues setting `bytes` of device memory to zero bytes (nothing for 0): the value 0 of every
  // integer type and +0.0 of every IEEE float type.
  OrtStatusPtr ZeroOnDevice(void* dst, size_t bytes) const;
  // Copies `bytes` of host memory to the device in stream order (after the work queued before it,
  // which may still read `dst`) and waits for the stream, so that `src` may be freed on return.
  // Costs one wait (nothing for 0 bytes).
  OrtStatusPtr CopyFromHostAndWait(void* dst, const void* src, size_t bytes) const;
  // Waits for the work queued on the stream, after launching CANN op `acl_op` whose inputs the
  // device checks (index values). A device fault then becomes this kernel's error "<who>: the
  // device failed running CANN <acl_op> ...: <ACL code>: <aclGetRecentErrMsg>" (the runtime's
  // message names the failing op and, on the simulator, the offending value) instead of surfacing
  // at the CANN EP's end-of-run synchronisation with the ACL code alone. Costs one wait.
  OrtStatusPtr WaitForDeviceFaults(const std::string& who, const char* acl_op) const;
};

// The ACL data type of an ONNX element type (ACL_DT_UNDEFINED for types without one).
aclDataType AclTypeOf(ONNXTensorElementDataType type);

// The name of the node a kernel is created for ("" if it has none), for error messages.
OrtStatusPtr KernelNodeName(const OrtKernelInfo* info, std::string* name);

// The ACL functions for kernel creation (SoC checks); an error naming `op` if ACL is missing.
OrtStatusPtr AclForKernel(const char* op, const AclApi** acl);

}  // namespace ortops::cann
