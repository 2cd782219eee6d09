// EluGrad inner loops over contiguous ranges, picked once per process by CPU features.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ortops {

struct EluGradLoops {
  const char* name;
  // `streaming` asks for non-temporal stores (for outputs much larger than the caches).
  void (*f32)(const float* g, const float* a, float* y, size_t n, float alpha, bool streaming);
  void (*f16)(const uint16_t* g, const uint16_t* a, uint16_t* y, size_t n, float alpha,
              bool streaming);
  void (*bf16)(const uint16_t* g, const uint16_t* a, uint16_t* y, size_t n, float alpha,
               bool streaming);
};

// Whether this CPU has AVX2 and F16C.
bool CpuHasAvx2();
// Portable C++ loops: exact on any CPU.
const EluGradLoops& PortableLoops();
// AVX2 + F16C loops, or nullptr when the library was built without them.
const EluGradLoops* Avx2Loops();
// The loops for this CPU: AVX2 when it has AVX2 and F16C, unless the environment variable
// ORTOPS_FORCE_PORTABLE is set to a non-empty value other than "0" (read on every call).
const EluGradLoops& SelectLoops();

}  // namespace ortops
