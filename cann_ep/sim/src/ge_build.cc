// ge::aclgrphBuild* (model building for graph mode): not simulated, fail cleanly.
#pragma GCC visibility push(default)
#include <graph/ascend_string.h>
#include <graph/graph.h>
#pragma GCC visibility pop

#include <map>

#include "ge_decls.h"
#include "internal.h"

namespace ge {

namespace {
graphStatus not_simulated(const char* api) {
  aclsim::fail(ACL_ERROR_FEATURE_UNSUPPORTED,
               "%s: graph mode is not simulated; use the CANN EP with enable_cann_graph=0", api);
  ACLSIM_TRACE("%s() = GRAPH_FAILED", api);
  return GRAPH_FAILED;
}
}  // namespace

graphStatus aclgrphBuildInitialize(std::map<AscendString, AscendString>& global_options) {
  (void)global_options;
  // Succeeds: the EP calls it in single-op mode too; building itself fails.
  ACLSIM_TRACE("ge::aclgrphBuildInitialize(%zu options) = GRAPH_SUCCESS", global_options.size());
  return GRAPH_SUCCESS;
}

graphStatus aclgrphBuildModel(const Graph& graph, const std::map<AscendString, AscendString>& build_options,
                              ModelBufferData& model) {
  (void)graph;
  (void)build_options;
  (void)model;
  return not_simulated("ge::aclgrphBuildModel");
}

graphStatus aclgrphSaveModel(const char* output_file, const ModelBufferData& model) {
  (void)output_file;
  (void)model;
  return not_simulated("ge::aclgrphSaveModel");
}

void aclgrphBuildFinalize() { ACLSIM_TRACE("ge::aclgrphBuildFinalize()"); }

}  // namespace ge
