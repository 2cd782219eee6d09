// The library's entry point: one "ai.ortops" domain holding every kernel of every EP.
//
// The ops are listed once, in the build's generated op_list.inc (one ORTOPS_OP(folder) line per
// folder of ort_ops/csrc/ops/, with the EPs it has kernels for); each folder provides
// ortops::<folder>::CpuOps() / CannOps().
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "common/ort_api.h"
#include "op_includes.inc"

#if !defined(ORTOPS_DOMAIN) || !defined(ORTOPS_OPSET_VERSION)
#error "ORTOPS_DOMAIN and ORTOPS_OPSET_VERSION come from ort_ops/domain.py through CMake"
#endif

namespace ortops {
namespace {

uint32_t g_api_version = 0;

// One registration list per execution provider, in the order of op_list.inc.
std::vector<OrtCustomOp*> AllOps() {
  std::vector<OrtCustomOp*> ops;
  auto add = [&ops](const std::vector<OrtCustomOp*>& list) { ops.insert(ops.end(), list.begin(), list.end()); };
#define ORTOPS_CPU_OP(folder) add(folder::CpuOps());
#define ORTOPS_CANN_OP(folder) add(folder::CannOps());
#include "op_list.inc"
#undef ORTOPS_CPU_OP
#undef ORTOPS_CANN_OP
  return ops;
}

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
// that use them may outlive any single registration call. Each op's `version` is the API version
// negotiated with the runtime (older runtimes reject ops of a newer version).
OrtStatusPtr GetDomain(OrtCustomOpDomain** out) {
  static std::once_flag once;
  static OrtCustomOpDomain* domain = nullptr;
  static std::string* error = new std::string();  // never destroyed: read by later registrations
  std::call_once(once, [] {
    const OrtApi& api = Api();
    std::vector<std::string> keys;
    OrtCustomOpDomain* created = nullptr;
    if (OrtStatusPtr status = api.CreateCustomOpDomain(ORTOPS_DOMAIN, &created)) {
      *error = api.GetErrorMessage(status);
      api.ReleaseStatus(status);
      return;
    }
    for (OrtCustomOp* op : AllOps()) {
      op->version = g_api_version;
      const std::string key = OpKey(op);
      for (const std::string& seen : keys) {
        if (seen == key) *error = "ort_ops: kernel registered twice: " + key;
      }
      keys.push_back(key);
      if (OrtStatusPtr status = api.CustomOpDomain_Add(created, op)) {
        *error = api.GetErrorMessage(status);
        api.ReleaseStatus(status);
      }
    }
    if (error->empty()) {
      domain = created;
    } else {
      api.ReleaseCustomOpDomain(created);
    }
  });
  if (domain == nullptr) return MakeError(*error, ORT_FAIL);
  *out = domain;
  return nullptr;
}

}  // namespace

uint32_t NegotiatedApiVersion() { return g_api_version; }

}  // namespace ortops

namespace {
// Session config entry marking options the domain was added to (custom_op.<name>.<key> is ORT's
// convention for entries that belong to a custom-op library).
constexpr const char* kRegisteredKey = "custom_op.ortops.registered";

// The newest API the runtime offers, from the headers' version down to the kernels' minimum.
const OrtApi* NegotiateApi(const OrtApiBase* api_base, uint32_t* version) {
  for (uint32_t v = ORT_API_VERSION; v >= ortops::kMinApiVersion; --v) {
    if (const OrtApi* api = api_base->GetApi(v)) {
      *version = v;
      return api;
    }
  }
  return nullptr;
}
}  // namespace

extern "C" __attribute__((visibility("default"))) OrtStatus* ORT_API_CALL
RegisterCustomOps(OrtSessionOptions* options, const OrtApiBase* api_base) {
  uint32_t version = 0;
  const OrtApi* api = NegotiateApi(api_base, &version);
  if (api == nullptr) {
    const OrtApi* oldest = api_base->GetApi(1);
    const std::string message = std::string("ort_ops needs ONNX Runtime API version ") +
                                std::to_string(ortops::kMinApiVersion) +
                                " (ONNX Runtime 1.17) or newer; this "
                                "runtime is " +
                                api_base->GetVersionString();
    return oldest->CreateStatus(ORT_FAIL, message.c_str());
  }
  if (ortops::g_api_version != 0 && ortops::g_api_version != version) {
    return api->CreateStatus(ORT_FAIL, "ort_ops: registered with two ONNX Runtime API versions in one process");
  }
  ortops::g_api_version = version;
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

// The kernels the library registers, one "Op EP dtype,dtype,..." line each (for the contract
// test: they must equal the op definitions of ort_ops/ops/). Valid until the next call.
extern "C" __attribute__((visibility("default"))) const char* OrtOpsRegisteredKernels() {
  static thread_local std::string text;
  text.clear();
  for (OrtCustomOp* op : ortops::AllOps()) {
    const char* ep = op->GetExecutionProviderType(op);
    text += std::string(op->GetName(op)) + " " + (ep != nullptr ? ep : "CPUExecutionProvider") + " ";
    for (size_t i = 0; i < op->GetInputTypeCount(op); ++i) {
      text += (i ? "," : "") + std::to_string(static_cast<int>(op->GetInputType(op, i)));
    }
    text += "\n";
  }
  return text.c_str();
}

// The API version negotiated with the runtime (0 before the first registration).
extern "C" __attribute__((visibility("default"))) uint32_t OrtOpsApiVersion() { return ortops::g_api_version; }
