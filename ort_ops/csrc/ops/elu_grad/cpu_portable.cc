// Portable EluGrad loops: the scalar math, no intrinsics.
#include "ops/elu_grad/cpu_loops.h"
#include "ops/elu_grad/cpu_math.h"

namespace ortops::elu_grad {
namespace {

template <typename T>
void Loop(const void* g, const void* a, void* y, size_t n, float alpha, bool) {
  EluGradScalar<T>(g, a, y, n, alpha);
}

}  // namespace

const CpuLoops& PortableLoops() {
  static const CpuLoops loops{"portable", Loop<Float32>, Loop<Float16>, Loop<BFloat16>};
  return loops;
}

}  // namespace ortops::elu_grad
