// What the gradients of the normalisations (BatchNormGrad, LayerNormGrad) share: inputs dy, x,
// mean, a second statistic (var or inv_std_dev) and scale; outputs dx (x's shape) and the optional
// dscale and dbias (the parameters' shape).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/element_type.h"
#include "common/tensor_io.h"

namespace ortops {

struct NormGradRun {
  TensorView dy, x, mean, scale;
  void* dx = nullptr;
  void* dscale = nullptr;  // nullptr: the node does not produce it
  void* dbias = nullptr;

  // Reads inputs 0 to 4: dy, x, mean, the second statistic into `statistic`, scale.
  OrtStatusPtr ReadInputs(OrtKernelContext* context, TensorView* statistic) {
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 0, &dy));
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 1, &x));
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 2, &mean));
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 3, statistic));
    return GetInput(context, 4, &scale);
  }

  // nullptr if dy has x's shape, else an error of op `op` naming both shapes.
  OrtStatusPtr CheckDyShape(const char* op) const {
    if (dy.shape == x.shape) return nullptr;
    return MakeError(std::string(op) + ": dy shape " + ShapeText(dy.shape) + " differs from x shape " +
                     ShapeText(x.shape));
  }

  // Allocates dx (x's shape) and the dscale / dbias the node produces (`param_shape`; left null
  // when it does not).
  OrtStatusPtr AllocateOutputs(OrtKernelContext* context, const std::vector<int64_t>& param_shape) {
    ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 0, x.shape, &dx));
    bool produced = false;
    ORTOPS_RETURN_IF_ERROR(AllocateOptionalOutput(context, 1, param_shape, &dscale, &produced));
    return AllocateOptionalOutput(context, 2, param_shape, &dbias, &produced);
  }

  // Stores parameter `index`'s dscale and dbias (float32, rounded once to T) where produced.
  template <typename T>
  void StoreParamGrads(size_t index, float dscale_value, float dbias_value) const {
    if (dscale != nullptr) StoreFloat<T>(dscale, index, dscale_value);
    if (dbias != nullptr) StoreFloat<T>(dbias, index, dbias_value);
  }
};

}  // namespace ortops
