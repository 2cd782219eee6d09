// LeakyReluGrad for the kernels: ort_ops/ops/leaky_relu_grad.py declares it (name, inputs, the
// negative_slope attribute and its default, dtypes, providers), the build generates `Declaration`
// from it:
//   backprops = features > 0 ? gradients : gradients * negative_slope
#pragma once

#include "declared/leaky_relu_grad.h"

namespace ortops::leaky_relu_grad {

using Def = Declaration;

}  // namespace ortops::leaky_relu_grad
