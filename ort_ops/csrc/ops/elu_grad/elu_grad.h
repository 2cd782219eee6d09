// EluGrad for the kernels: ort_ops/ops/elu_grad.py declares it (name, inputs, the alpha attribute
// and its default, dtypes, providers), the build generates `Declaration` from it:
//   y = activations < 0 ? (activations + alpha) * grads : grads
#pragma once

#include "declared/elu_grad.h"

namespace ortops::elu_grad {

// The kernels are built from the declared attributes (Def::Attributes, alpha) and name the op
// and its inputs through Def::kName and Def::InputNames().
using Def = Declaration;

}  // namespace ortops::elu_grad
