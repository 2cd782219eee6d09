// CPU features that select vector loops at run time.
#pragma once

namespace ortops {

// Whether this CPU has AVX2 and F16C (false where the library has no x86-64 vector loops).
inline bool CpuHasAvx2F16c() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
#else
  return false;
#endif
}

}  // namespace ortops
