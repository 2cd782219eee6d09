// GE parser/build functions the CANN EP imports but the torch_npu headers do not declare.
// Their parameter lists must produce exactly the mangled names the provider imports
// (checked by tests/cann/test_sim_symbols.py).
#pragma once
#include <cstddef>
#include <map>

#pragma GCC visibility push(default)
#include <graph/ge_error_codes.h>
namespace ge {
class AscendString;
class Graph;
struct ModelBufferData;  // only used by reference

graphStatus aclgrphParseONNXFromMem(const char* buffer, size_t size,
                                    const std::map<AscendString, AscendString>& parser_params, Graph& graph);
graphStatus aclgrphBuildInitialize(std::map<AscendString, AscendString>& global_options);
graphStatus aclgrphBuildModel(const Graph& graph, const std::map<AscendString, AscendString>& build_options,
                              ModelBufferData& model);
graphStatus aclgrphSaveModel(const char* output_file, const ModelBufferData& model);
void aclgrphBuildFinalize();
}  // namespace ge
#pragma GCC visibility pop
