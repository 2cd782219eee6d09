// The library's entry point: the "ai.ortops" domain holding every kernel of every EP of the
// library's own ops, and the "ai.ortops.cann" domain of standard ONNX ops placed on the CANN EP.
//
// Every kernel file registers through one idiom (common/declared_op.h): it defines
// `void Register<Ep>(OpList& list)` in its namespace, adding its ops. The calls are listed once,
// in the build's generated lists: op_list.inc (one line per op of ort_ops/ops/ and provider its
// declaration names: ortops::<op>::RegisterCpu / RegisterCann) and placed_list.inc (one line per
// file of ort_ops/csrc/placed/: ortops::placed::<file>::RegisterCann).
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "common/declared_op.h"
#include "common/op_declaration.h"
#include "common/ort_api.h"
#include "op_includes.inc"

#if !defined(ORTOPS_DOMAIN) || !defined(ORTOPS_CANN_DOMAIN) || !defined(ORTOPS_OPSET_VERSION)
#error "ORTOPS_DOMAIN, ORTOPS_CANN_DOMAIN and ORTOPS_OPSET_VERSION come from ort_ops/domain.py through CMake"
#endif

#define ORTOPS_OP_KERNELS(op, ep)  \
  namespace ortops::op {           \
  void Register##ep(OpList& list); \
  }
#include "op_list.inc"
#undef ORTOPS_OP_KERNELS
#define ORTOPS_PLACED(file)        \
  namespace ortops::placed::file { \
  void RegisterCann(OpList& list); \
  }
#include "placed_list.inc"
#undef ORTOPS_PLACED

namespace ortops {
namespace {

uint32_t g_api_version = 0;

struct DomainOps {
  const char* name;
  std::vector<OrtCustomOp*> ops;
};

// The registration lists, in the order of op_list.inc and placed_list.inc.
const std::vector<DomainOps>& AllDomains() {
  static const std::vector<DomainOps>* domains = [] {
    auto* made = new std::vector<DomainOps>{{ORTOPS_DOMAIN, {}}, {ORTOPS_CANN_DOMAIN, {}}};
    // Runs one kernel file's Register<Ep> on a list of `ep` and appends its ops to `to`.
    auto add = [](std::vector<OrtCustomOp*>& to, const char* ep, void (*register_ops)(OpList&)) {
      OpList list(ep);
      register_ops(list);
      to.insert(to.end(), list.ops().begin(), list.ops().end());
    };
    std::vector<OrtCustomOp*>& own = (*made)[0].ops;
    std::vector<OrtCustomOp*>& placed = (*made)[1].ops;
    (void)add;
#define ORTOPS_OP_KERNELS(op, ep) add(own, k##ep##Provider, op::Register##ep);
#include "op_list.inc"
#undef ORTOPS_OP_KERNELS
#define ORTOPS_PLACED(file) add(placed, kCannProvider, placed::file::RegisterCann);
#include "placed_list.inc"
#undef ORTOPS_PLACED
    (void)own;
    (void)placed;
    return made;
  }();
  return *domains;
}

std::string TypeList(const OrtCustomOp* op, bool inputs) {
  std::string text;
  const size_t n = inputs ? op->GetInputTypeCount(op) : op->GetOutputTypeCount(op);
  for (size_t i = 0; i < n; ++i) {
    const auto type = inputs ? op->GetInputType(op, i) : op->GetOutputType(op, i);
    const auto kind = inputs ? op->GetInputCharacteristic(op, i) : op->GetOutputCharacteristic(op, i);
    text += (i ? "," : "") + std::to_string(static_cast<int>(type)) + (kind == INPUT_OUTPUT_VARIADIC ? "*" : "");
  }
  return text.empty() ? "-" : text;
}

// "<domain> <op> <EP> <input types> <output types>" (ONNX element type codes).
std::string OpKey(const char* domain, const OrtCustomOp* op) {
  const char* ep = op->GetExecutionProviderType(op);
  return std::string(domain) + " " + op->GetName(op) + " " + (ep != nullptr ? ep : "CPUExecutionProvider") + " " +
         TypeList(op, true) + " " + TypeList(op, false);
}

// Builds the domains once; they and the ops stay alive until the process ends, as sessions
// that use them may outlive any single registration call. Each op's `version` is the API version
// negotiated with the runtime (older runtimes reject ops of a newer version).
OrtStatusPtr GetDomains(std::vector<OrtCustomOpDomain*>* out) {
  static std::once_flag once;
  static std::vector<OrtCustomOpDomain*>* domains = new std::vector<OrtCustomOpDomain*>();
  static std::string* error = new std::string();  // never destroyed: read by later registrations
  std::call_once(once, [] {
    const OrtApi& api = Api();
    std::vector<std::string> keys;
    std::vector<OrtCustomOpDomain*> created;
    for (const DomainOps& d : AllDomains()) {
      if (d.ops.empty()) continue;  // (no CANN kernels in a CPU-only build)
      OrtCustomOpDomain* domain = nullptr;
      if (OrtStatusPtr status = api.CreateCustomOpDomain(d.name, &domain)) {
        *error = api.GetErrorMessage(status);
        api.ReleaseStatus(status);
        break;
      }
      created.push_back(domain);
      for (OrtCustomOp* op : d.ops) {
        op->version = g_api_version;
        const std::string key = OpKey(d.name, op);
        for (const std::string& seen : keys) {
          if (seen == key) *error = "ort_ops: kernel registered twice: " + key;
        }
        keys.push_back(key);
        if (OrtStatusPtr status = api.CustomOpDomain_Add(domain, op)) {
          *error = api.GetErrorMessage(status);
          api.ReleaseStatus(status);
        }
      }
    }
    if (error->empty()) {
      *domains = created;
    } else {
      for (OrtCustomOpDomain* d : created) api.ReleaseCustomOpDomain(d);
    }
  });
  if (domains->empty()) return MakeError(error->empty() ? "ort_ops: no ops registered" : *error, ORT_FAIL);
  *out = *domains;
  return nullptr;
}

}  // namespace

uint32_t NegotiatedApiVersion() { return g_api_version; }

}  // namespace ortops

namespace {
// Session config entry marking options the domain was added to (custom_op.<name>.<key> is ORT's
// convention for entries that belong to a custom-op library).
constexpr const char* kRegisteredKey = "custom_op.ortops.registered";

// The C API version to request first: ONNX Runtime 1.x offers API versions 1 to x (1.19 -> 19),
// so the runtime's version string ("1.19.2") names it without asking. GetApi(N) for an N the
// runtime lacks returns NULL and prints "The requested API version [N] is not available" to
// stderr, so the library asks only for versions the runtime has. An unparsable or non-1.x
// version string starts from the headers' version.
uint32_t FirstApiToRequest(const char* runtime_version) {
  if (runtime_version == nullptr || std::strncmp(runtime_version, "1.", 2) != 0) return ORT_API_VERSION;
  uint32_t minor = 0;
  const char* p = runtime_version + 2;
  if (*p < '0' || *p > '9') return ORT_API_VERSION;
  for (; *p >= '0' && *p <= '9' && minor <= ORT_API_VERSION; ++p) minor = minor * 10 + static_cast<uint32_t>(*p - '0');
  return minor < ORT_API_VERSION ? minor : ORT_API_VERSION;
}

// The newest API the runtime offers, from min(runtime's, headers') version down to the kernels'
// minimum.
const OrtApi* NegotiateApi(const OrtApiBase* api_base, uint32_t* version) {
  for (uint32_t v = FirstApiToRequest(api_base->GetVersionString()); v >= ortops::kMinApiVersion; --v) {
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
  std::vector<OrtCustomOpDomain*> domains;
  ORTOPS_RETURN_IF_ERROR(ortops::GetDomains(&domains));
  for (OrtCustomOpDomain* domain : domains) ORTOPS_RETURN_IF_ERROR(api->AddCustomOpDomain(options, domain));
  return api->AddSessionConfigEntry(options, kRegisteredKey, "1");
}

// The kernels the library registers, one "<domain> <op> <EP> <input types> <output types>" line
// each, types as comma-separated ONNX element type codes ("-" for none; "*" after the last one:
// it repeats, a variadic input or output): for the contract test
// (they must equal the op definitions of ort_ops/ops/) and the placement pass (it places only
// what has a kernel). Valid until the next call on the same thread.
extern "C" __attribute__((visibility("default"))) const char* OrtOpsRegisteredKernels() {
  static thread_local std::string text;
  text.clear();
  for (const ortops::DomainOps& d : ortops::AllDomains()) {
    for (const OrtCustomOp* op : d.ops) text += ortops::OpKey(d.name, op) + "\n";
  }
  return text.c_str();
}

// The library's own ops as their generated declarations say (build dir: declared/<op>.h from
// ort_ops/ops/<op>.py), one line each: "<op> <inputs> <outputs> <attributes> <providers>".
// Inputs and outputs: comma-separated "name[?][@host]:type" (? optional, @host in CPU memory;
// type "T" or an ONNX element type code); attributes "name:kind=default" (lists ';'-separated),
// "-" for none; providers "CPU,CANN" as declared (whether or not this build has the CANN kernels).
// For tests/ops/test_declarations.py (the generated C++ must say what the OpDef says).
extern "C" __attribute__((visibility("default"))) const char* OrtOpsDeclarations() {
  static thread_local std::string text;
  text.clear();
#define ORTOPS_DECLARED_OP(op)                                                                    \
  {                                                                                               \
    using D = ortops::op::Declaration;                                                            \
    const std::string attributes = D::AttributesText();                                           \
    text += std::string(D::kName) + " " + ortops::DeclaredIoText<D>() + " " +                     \
            (attributes.empty() ? std::string("-") : attributes) + " " +                          \
            (D::kOnCpu ? (D::kOnCann ? "CPU,CANN" : "CPU") : (D::kOnCann ? "CANN" : "-")) + "\n"; \
  }
#include "op_declarations.inc"
#undef ORTOPS_DECLARED_OP
  return text.c_str();
}

// The API version negotiated with the runtime (0 before the first registration).
extern "C" __attribute__((visibility("default"))) uint32_t OrtOpsApiVersion() { return ortops::g_api_version; }
