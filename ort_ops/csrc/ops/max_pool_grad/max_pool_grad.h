// MaxPoolGrad for the kernels: ort_ops/ops/max_pool_grad.py declares it (name, inputs, attributes
// and defaults, dtypes, providers), the build generates `Declaration` from it:
//   dX = each window's dY added (float32) to the window's first element equal to Y, rounded once to T.
// The attribute and input checks both kernels share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tensor_io.h"
#include "declared/max_pool_grad.h"

namespace ortops::max_pool_grad {

constexpr const char* kName = Declaration::kName;

// The declared attributes checked and unpacked (ReadAttributes).
struct Attributes {
  int64_t kh = 0, kw = 0;                            // kernel_shape
  int64_t sh = 0, sw = 0;                            // strides
  int64_t top = 0, left = 0, bottom = 0, right = 0;  // pads (ONNX order: begins, then ends)
};

// Output length of floor-mode pooling; 0 when the padded input is shorter than the window (C++
// division truncates towards zero: (size - kernel) / stride alone would give 1 there for stride > 1).
inline int64_t PooledSize(int64_t size, int64_t kernel, int64_t stride, int64_t before, int64_t after) {
  const int64_t span = size + before + after;
  return span < kernel ? 0 : (span - kernel) / stride + 1;
}

// Reads kernel_shape, strides, pads (Declaration::ReadAttributes); an error naming the attribute and its value.
inline OrtStatusPtr ReadAttributes(const OrtKernelInfo* info, Attributes* a) {
  Declaration::Attributes declared;
  ORTOPS_RETURN_IF_ERROR(Declaration::ReadAttributes(info, &declared));
  const std::vector<int64_t>& kernel = declared.kernel_shape;
  const std::vector<int64_t>& strides = declared.strides;
  const std::vector<int64_t>& pads = declared.pads;
  if (kernel.size() != 2 || kernel[0] < 1 || kernel[1] < 1) {
    return MakeError(std::string(kName) + ": kernel_shape must be two positive ints, got " + ShapeText(kernel));
  }
  if (strides.size() != 2 || strides[0] < 1 || strides[1] < 1) {
    return MakeError(std::string(kName) + ": strides must be two positive ints, got " + ShapeText(strides));
  }
  if (pads.size() != 4 || pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0) {
    return MakeError(std::string(kName) + ": pads must be four non-negative ints [top, left, bottom, right], got " +
                     ShapeText(pads));
  }
  if (pads[0] >= kernel[0] || pads[2] >= kernel[0] || pads[1] >= kernel[1] || pads[3] >= kernel[1]) {
    return MakeError(std::string(kName) + ": pads " + ShapeText(pads) + " must be smaller than kernel_shape " +
                     ShapeText(kernel) + " (a window of padding alone has no maximum)");
  }
  *a = Attributes{kernel[0], kernel[1], strides[0], strides[1], pads[0], pads[1], pads[2], pads[3]};
  return nullptr;
}

// One run's tensors and sizes.
struct Run {
  TensorView x, y, dy;
  int64_t planes = 0, h = 0, w = 0, ho = 0, wo = 0;  // planes = N * C
};

// Reads X, Y, dY and checks that Y and dY have the pooled shape of X (errors name the inputs and shapes).
inline OrtStatusPtr GetInputs(OrtKernelContext* context, const Attributes& a, Run* run) {
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 0, &run->x));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 1, &run->y));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 2, &run->dy));
  const std::vector<int64_t>& x = run->x.shape;
  if (x.size() != 4) return MakeError(std::string(kName) + ": X must be 4-D [N, C, H, W], got shape " + ShapeText(x));
  const std::vector<int64_t> want{x[0], x[1], PooledSize(x[2], a.kh, a.sh, a.top, a.bottom),
                                  PooledSize(x[3], a.kw, a.sw, a.left, a.right)};
  const std::string geometry = " (kernel_shape " + ShapeText({a.kh, a.kw}) + ", strides " + ShapeText({a.sh, a.sw}) +
                               ", pads " + ShapeText({a.top, a.left, a.bottom, a.right}) + ")";
  if (want[2] < 1 || want[3] < 1) {
    return MakeError(std::string(kName) + ": X shape " + ShapeText(x) + " is smaller than the window" + geometry);
  }
  if (run->y.shape != want) {
    return MakeError(std::string(kName) + ": Y shape " + ShapeText(run->y.shape) + " is not the pooled shape " +
                     ShapeText(want) + " of X " + ShapeText(x) + geometry);
  }
  if (run->dy.shape != run->y.shape) {
    return MakeError(std::string(kName) + ": dY shape " + ShapeText(run->dy.shape) + " differs from Y shape " +
                     ShapeText(run->y.shape));
  }
  run->planes = x[0] * x[1];
  run->h = x[2];
  run->w = x[3];
  run->ho = want[2];
  run->wo = want[3];
  return nullptr;
}

}  // namespace ortops::max_pool_grad
