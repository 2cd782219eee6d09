// Portable EluGrad loops: the scalar math, no intrinsics.
#include "cpu/elu_grad_loops.h"
#include "common/elu_grad_math.h"

namespace ortops {
namespace {

void F32(const float* g, const float* a, float* y, size_t n, float alpha, bool) {
  EluGradScalar<Float32>(g, a, y, n, alpha);
}
void F16(const uint16_t* g, const uint16_t* a, uint16_t* y, size_t n, float alpha, bool) {
  EluGradScalar<Float16>(g, a, y, n, alpha);
}
void BF16(const uint16_t* g, const uint16_t* a, uint16_t* y, size_t n, float alpha, bool) {
  EluGradScalar<BFloat16>(g, a, y, n, alpha);
}

}  // namespace

const EluGradLoops& PortableLoops() {
  static const EluGradLoops loops{"portable", F32, F16, BF16};
  return loops;
}

}  // namespace ortops
