// The library's entry point: one "ai.ortops" domain holding every kernel of every EP.
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "common/ort_api.h"
#include "cann/elu_grad_op.h"
#include "cpu/elu_grad_op.h"

#if !defined(ORTOPS_DOMAIN) || !defined(ORTOPS_OPSET_VERSION)
#error "ORTOPS_DOMAIN and ORTOPS_OPSET_VERSION come from ort_ops/domain.py through CMake"
#endif

namespace ortops {
namespace {

// One registration list per execution provider, in order.
using OpList = const std::vector<const OrtCustomOp*>& (*)();
constexpr OpList kOpLists[] = {&cpu::Ops, &cann::Ops};

std::string OpKey(const OrtCustomOp* op) {
  std::string key = std::string(op->GetName(op)) + " on ";
  const char* ep = op->GetExecutionProviderType(op);
  key += ep != nullptr ? ep : "CPUExecutionProvider";
  for (size_t i = 0; i < op->GetInputTypeCount(op); ++i) {
    key += " " + std::to_string(static_cast<int>(op->GetInputType(op, i)));
  }
  return key;
}

// Builds the domain once; it and the ops stay alive until the process ends, as sessions
// that use them may outlive any single registration call.
OrtStatusPtr GetDomain(OrtCustomOpDomain** out) {
  static std::once_flag once;
  static OrtCustomOpDomain* domain = nullptr;
  static std::string error;
  std::call_once(once, [] {
    const OrtApi& api = Api();
    std::vector<std::string> keys;
    OrtCustomOpDomain* created = nullptr;
    if (OrtStatusPtr status = api.CreateCustomOpDomain(ORTOPS_DOMAIN, &created)) {
      error = api.GetErrorMessage(status);
      api.ReleaseStatus(status);
      return;
    }
    for (OpList list : kOpLists) {
      for (const OrtCustomOp* op : list()) {
        const std::string key = OpKey(op);
        for (const std::string& seen : keys) {
          if (seen == key) error = "ort_ops: kernel registered twice: " + key;
        }
        keys.push_back(key);
        if (OrtStatusPtr status = api.CustomOpDomain_Add(created, op)) {
          error = api.GetErrorMessage(status);
          api.ReleaseStatus(status);
        }
      }
    }
    if (error.empty()) {
      domain = created;
    } else {
      api.ReleaseCustomOpDomain(created);
    }
  });
  if (domain == nullptr) return MakeError(error, ORT_FAIL);
  *out = domain;
  return nullptr;
}

}  // namespace
}  // namespace ortops

namespace {
// Session config entry marking options the domain was added to (custom_op.<name>.<key> is ORT's
// convention for entries that belong to a custom-op library).
constexpr const char* kRegisteredKey = "custom_op.ortops.registered";
}  // namespace

extern "C" __attribute__((visibility("default"))) OrtStatus* ORT_API_CALL
RegisterCustomOps(OrtSessionOptions* options, const OrtApiBase* api_base) {
  const OrtApi* api = api_base->GetApi(ORT_API_VERSION);
  if (api == nullptr) {
    const OrtApi* oldest = api_base->GetApi(1);
    const std::string message = std::string("ort_ops needs ONNX Runtime API version ") +
                                std::to_string(ORT_API_VERSION) + " or newer; this runtime is " +
                                api_base->GetVersionString();
    return oldest->CreateStatus(ORT_FAIL, message.c_str());
  }
  Ort::InitApi(api);
  // Registering twice on one SessionOptions (reused options, or options passed on to a helper
  // that registers too) must not add the domain twice: ORT would refuse the session with
  // "Domain already set in registry". The options remember it in a session config entry.
  int registered = 0;
  ORTOPS_RETURN_IF_ERROR(api->HasSessionConfigEntry(options, kRegisteredKey, &registered));
  if (registered) return nullptr;
  OrtCustomOpDomain* domain = nullptr;
  ORTOPS_RETURN_IF_ERROR(ortops::GetDomain(&domain));
  ORTOPS_RETURN_IF_ERROR(api->AddCustomOpDomain(options, domain));
  return api->AddSessionConfigEntry(options, kRegisteredKey, "1");
}
