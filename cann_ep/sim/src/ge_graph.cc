// ge::AscendString and ge::Graph members the CANN EP imports (defined against the real
// graph/ascend_string.h and graph/graph.h so object layouts match), and the ONNX parser
// entry point, which fails: graph mode is not simulated.
#pragma GCC visibility push(default)
#include <graph/ascend_string.h>
#include <graph/graph.h>
#pragma GCC visibility pop

#include <cstring>
#include <map>

#include "ge_decls.h"
#include "internal.h"

namespace ge {

AscendString::AscendString(const char_t* const name) {
  if (name != nullptr) name_ = std::make_shared<std::string>(name);
}

bool AscendString::operator<(const AscendString& d) const {
  if (name_ == nullptr) return d.name_ != nullptr;
  if (d.name_ == nullptr) return false;
  return *name_ < *d.name_;
}

// impl_ stays null: nothing can be built on a simulated graph.
Graph::Graph(const char_t* name) { (void)name; }

graphStatus aclgrphParseONNXFromMem(const char* buffer, size_t size,
                                    const std::map<AscendString, AscendString>& parser_params, Graph& graph) {
  (void)buffer;
  (void)parser_params;
  (void)graph;
  aclsim::fail(ACL_ERROR_FEATURE_UNSUPPORTED,
               "ge::aclgrphParseONNXFromMem: graph mode is not simulated; use the CANN EP with "
               "enable_cann_graph=0");
  ACLSIM_TRACE("ge::aclgrphParseONNXFromMem(size=%zu) = GRAPH_FAILED", size);
  return GRAPH_FAILED;
}

}  // namespace ge
