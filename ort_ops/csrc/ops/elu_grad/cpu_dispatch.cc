// Chooses EluGrad's CPU loops for this CPU.
#include <cstdlib>
#include <cstring>

#include "common/cpu_features.h"
#include "ops/elu_grad/cpu_loops.h"

namespace ortops::elu_grad {

const CpuLoops& SelectLoops() {
  static const bool has_avx2 = CpuHasAvx2F16c();
  const char* force = std::getenv("ORTOPS_FORCE_PORTABLE");
  const bool forced = force != nullptr && force[0] != '\0' && std::strcmp(force, "0") != 0;
  const CpuLoops* avx2 = Avx2Loops();
  return (has_avx2 && avx2 != nullptr && !forced) ? *avx2 : PortableLoops();
}

}  // namespace ortops::elu_grad

// Which loops EluGrad would use now ("avx2" or "portable"), for tests and diagnostics.
extern "C" __attribute__((visibility("default"))) const char* OrtOpsEluGradCpuLoops() {
  return ortops::elu_grad::SelectLoops().name;
}
