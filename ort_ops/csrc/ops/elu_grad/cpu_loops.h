// EluGrad's CPU inner loops over contiguous ranges, picked once per process by CPU features
// (common/cpu_features.h). Buffers may start at any address (element access is by memcpy or
// unaligned vector loads).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ortops::elu_grad {

// `streaming` asks for non-temporal stores (for outputs much larger than the caches).
using CpuLoop = void (*)(const void* grads, const void* activations, void* y, size_t n, float alpha, bool streaming);

struct CpuLoops {
  const char* name;
  CpuLoop f32, f16, bf16;
};

// Portable C++ loops: exact on any CPU.
const CpuLoops& PortableLoops();
// AVX2 + F16C loops, or nullptr when the library was built without them.
const CpuLoops* Avx2Loops();
// The loops for this CPU: AVX2 when it has AVX2 and F16C, unless the environment variable
// ORTOPS_FORCE_PORTABLE is set to a non-empty value other than "0" (read on every call).
const CpuLoops& SelectLoops();

}  // namespace ortops::elu_grad
