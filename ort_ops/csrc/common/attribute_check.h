// Rejecting attributes an op does not define, at kernel (session) creation.
//
// ORT's C API (API 21) looks a node's attributes up by name only; it cannot list them. So a kernel
// cannot see every attribute it does not declare. It probes the names a model is likely to hold
// by mistake: each declared name with one typo (two adjacent characters swapped, one dropped, one
// doubled) and the op's `foreign` names (attributes of the ops it mirrors, e.g. ONNX MaxPool's
// dilations, which it would otherwise ignore and compute something else). Any other undeclared
// name is caught by onnx.checker with the library's schemas (ort_ops.schemas), not by the kernel.
#pragma once

#include <initializer_list>

#include "common/ort_api.h"

namespace ortops {

// An error naming the node, every probed attribute it has that `op` does not declare, and the
// declared ones; null when it has none.
OrtStatusPtr RejectUndeclaredAttributes(const OrtKernelInfo* info, const char* op,
                                        std::initializer_list<const char*> declared,
                                        std::initializer_list<const char*> foreign);

}  // namespace ortops
