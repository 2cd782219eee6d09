// Chooses the EluGrad loops for this CPU.
#include <cstdlib>
#include <cstring>

#include "ops/elu_grad/cpu_loops.h"

namespace ortops {

const EluGradLoops& SelectLoops() {
  static const bool has_avx2 = CpuHasAvx2();
  const char* force = std::getenv("ORTOPS_FORCE_PORTABLE");
  const bool forced = force != nullptr && force[0] != '\0' && std::strcmp(force, "0") != 0;
  const EluGradLoops* avx2 = Avx2Loops();
  return (has_avx2 && avx2 != nullptr && !forced) ? *avx2 : PortableLoops();
}

}  // namespace ortops

// Which loops EluGrad would use now ("avx2" or "portable"), for tests and diagnostics.
extern "C" __attribute__((visibility("default"))) const char* OrtOpsCpuLoops() { return ortops::SelectLoops().name; }
