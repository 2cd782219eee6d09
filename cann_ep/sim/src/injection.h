// Failure injection shared by libascendcl (aclsimFailNextOp) and libacl_op_compiler.
#pragma once
#include <string>

#include "internal.h"

namespace aclsim {
// True (once) when the next op of `op_type` must fail; sets the code and where it came from.
ACLSIM_INTERNAL bool take_injected_failure(const char* op_type, aclError* code, std::string* source);
// True (once) when the next op of `op_type` must fault on the device when it runs (aclsimFaultNextOp,
// ACLSIM_FAULT_NEXT_OP); sets where it came from.
ACLSIM_INTERNAL bool take_injected_fault(const char* op_type, std::string* source);
}  // namespace aclsim
