// aclmdl* (offline-model / graph mode): not simulated. Loading or running a model fails
// with ACL_ERROR_FEATURE_UNSUPPORTED and a clear message; datasets are plain containers.
#include <vector>

#include "internal.h"
#include "tensor.h"

struct aclmdlDataset {
  std::vector<aclDataBuffer*> buffers;
};
struct aclmdlDesc {
  int unused = 0;
};

namespace {
aclError not_simulated(const char* api) {
  return aclsim::fail(ACL_ERROR_FEATURE_UNSUPPORTED,
                      "%s: graph mode is not simulated (offline models cannot run on the ACL simulator); "
                      "use the CANN EP with enable_cann_graph=0",
                      api);
}
}  // namespace

extern "C" {

ACL_FUNC_VISIBILITY aclError aclmdlLoadFromMem(const void* model, size_t modelSize, uint32_t* modelId) {
  (void)model;
  if (modelId) *modelId = 0;
  aclError rc = not_simulated("aclmdlLoadFromMem");
  ACLSIM_TRACE("aclmdlLoadFromMem(model=%p, modelSize=%zu) = %d", model, modelSize, rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclmdlLoadFromFile(const char* modelPath, uint32_t* modelId) {
  if (modelId) *modelId = 0;
  aclError rc = not_simulated("aclmdlLoadFromFile");
  ACLSIM_TRACE("aclmdlLoadFromFile(modelPath=%s) = %d", modelPath ? modelPath : "NULL", rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclmdlUnload(uint32_t modelId) {
  aclError rc = aclsim::fail(ACL_ERROR_INVALID_MODEL_ID,
                             "aclmdlUnload: unknown model id %u (graph mode is not simulated)", modelId);
  ACLSIM_TRACE("aclmdlUnload(modelId=%u) = %d", modelId, rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclmdlExecute(uint32_t modelId, const aclmdlDataset* input, aclmdlDataset* output) {
  (void)input;
  (void)output;
  aclError rc = not_simulated("aclmdlExecute");
  ACLSIM_TRACE("aclmdlExecute(modelId=%u) = %d", modelId, rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclmdlExecuteAsync(uint32_t modelId, const aclmdlDataset* input, aclmdlDataset* output,
                                                aclrtStream stream) {
  (void)input;
  (void)output;
  aclError rc = not_simulated("aclmdlExecuteAsync");
  ACLSIM_TRACE("aclmdlExecuteAsync(modelId=%u, stream=%p) = %d", modelId, stream, rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclmdlDesc* aclmdlCreateDesc() {
  aclmdlDesc* d = new aclmdlDesc();
  ACLSIM_TRACE("aclmdlCreateDesc() = %p", static_cast<void*>(d));
  return d;
}

ACL_FUNC_VISIBILITY aclError aclmdlDestroyDesc(aclmdlDesc* modelDesc) {
  ACLSIM_TRACE("aclmdlDestroyDesc(modelDesc=%p) = 0", static_cast<void*>(modelDesc));
  delete modelDesc;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclmdlGetDesc(aclmdlDesc* modelDesc, uint32_t modelId) {
  aclError rc = not_simulated("aclmdlGetDesc");
  ACLSIM_TRACE("aclmdlGetDesc(modelDesc=%p, modelId=%u) = %d", static_cast<void*>(modelDesc), modelId, rc);
  return rc;
}

ACL_FUNC_VISIBILITY size_t aclmdlGetNumInputs(aclmdlDesc* modelDesc) {
  ACLSIM_TRACE("aclmdlGetNumInputs(modelDesc=%p) = 0", static_cast<void*>(modelDesc));
  return 0;
}

ACL_FUNC_VISIBILITY size_t aclmdlGetNumOutputs(aclmdlDesc* modelDesc) {
  ACLSIM_TRACE("aclmdlGetNumOutputs(modelDesc=%p) = 0", static_cast<void*>(modelDesc));
  return 0;
}

ACL_FUNC_VISIBILITY size_t aclmdlGetInputSizeByIndex(aclmdlDesc* modelDesc, size_t index) {
  ACLSIM_TRACE("aclmdlGetInputSizeByIndex(modelDesc=%p, index=%zu) = 0", static_cast<void*>(modelDesc), index);
  return 0;
}

ACL_FUNC_VISIBILITY size_t aclmdlGetOutputSizeByIndex(aclmdlDesc* modelDesc, size_t index) {
  ACLSIM_TRACE("aclmdlGetOutputSizeByIndex(modelDesc=%p, index=%zu) = 0", static_cast<void*>(modelDesc), index);
  return 0;
}

ACL_FUNC_VISIBILITY aclError aclmdlGetOutputDims(const aclmdlDesc* modelDesc, size_t index, aclmdlIODims* dims) {
  (void)dims;
  aclError rc = not_simulated("aclmdlGetOutputDims");
  ACLSIM_TRACE("aclmdlGetOutputDims(modelDesc=%p, index=%zu) = %d", static_cast<const void*>(modelDesc), index, rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclmdlDataset* aclmdlCreateDataset() {
  aclmdlDataset* d = new aclmdlDataset();
  ACLSIM_TRACE("aclmdlCreateDataset() = %p", static_cast<void*>(d));
  return d;
}

ACL_FUNC_VISIBILITY aclError aclmdlDestroyDataset(const aclmdlDataset* dataset) {
  ACLSIM_TRACE("aclmdlDestroyDataset(dataset=%p) = 0", static_cast<const void*>(dataset));
  delete dataset;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclmdlAddDatasetBuffer(aclmdlDataset* dataset, aclDataBuffer* dataBuffer) {
  aclError rc = ACL_SUCCESS;
  if (dataset == nullptr || dataBuffer == nullptr)
    rc = aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclmdlAddDatasetBuffer: dataset or dataBuffer is NULL");
  else
    dataset->buffers.push_back(dataBuffer);
  ACLSIM_TRACE("aclmdlAddDatasetBuffer(dataset=%p, dataBuffer=%p) = %d", static_cast<void*>(dataset),
               static_cast<void*>(dataBuffer), rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclDataBuffer* aclmdlGetDatasetBuffer(const aclmdlDataset* dataset, size_t index) {
  aclDataBuffer* b = (dataset && index < dataset->buffers.size()) ? dataset->buffers[index] : nullptr;
  ACLSIM_TRACE("aclmdlGetDatasetBuffer(dataset=%p, index=%zu) = %p", static_cast<const void*>(dataset), index,
               static_cast<void*>(b));
  return b;
}

ACL_FUNC_VISIBILITY aclTensorDesc* aclmdlGetDatasetTensorDesc(const aclmdlDataset* dataset, size_t index) {
  ACLSIM_TRACE("aclmdlGetDatasetTensorDesc(dataset=%p, index=%zu) = NULL", static_cast<const void*>(dataset), index);
  return nullptr;
}

}  // extern "C"
