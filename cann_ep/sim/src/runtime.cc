// aclInit/aclFinalize, devices and the SoC name.
//
// Environment (read at aclInit): ACLSIM_DEVICE_COUNT (default 1; also read by
// aclrtGetDeviceCount before aclInit, which the CANN EP calls first), ACLSIM_SOC_NAME
// (default "Ascend910B1"; its family decides which op types exist, see soc.cc),
// ACLSIM_STREAM_DELAY_US (default 0).
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "internal.h"

namespace aclsim {
namespace {

struct Runtime {
  std::mutex mu;
  bool initialized = false;
  uint32_t device_count = 1;
  std::string soc_name = "Ascend910B1";
  int64_t delay_us = 0;
  int32_t last_device = -1;  // process-wide fallback for threads that never set one
};

Runtime& rt() {
  static Runtime* r = new Runtime();
  return *r;
}

std::atomic<int64_t> g_delay_us{0};
std::atomic<bool> g_initialized{false};
thread_local int32_t t_device = -1;

int64_t env_int(const char* name, int64_t def) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return def;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0') {
    warn("ignoring %s=%s (not an integer)", name, v);
    return def;
  }
  return x;
}

uint32_t env_device_count() {
  int64_t n = env_int("ACLSIM_DEVICE_COUNT", 1);
  return n < 0 ? 0 : static_cast<uint32_t>(n);
}

}  // namespace

bool initialized() { return g_initialized.load(); }
int64_t stream_delay_us() { return g_delay_us.load(); }

std::string soc_name() {
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.soc_name;
}

}  // namespace aclsim

extern "C" {

ACL_FUNC_VISIBILITY aclError aclInit(const char* configPath) {
  aclsim::Runtime& r = aclsim::rt();
  aclError rc = ACL_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.initialized) {
      rc = ACL_ERROR_REPEAT_INITIALIZE;
    } else {
      r.initialized = true;
      r.device_count = aclsim::env_device_count();
      const char* soc = std::getenv("ACLSIM_SOC_NAME");
      r.soc_name = (soc != nullptr && *soc != '\0') ? soc : "Ascend910B1";
      r.delay_us = aclsim::env_int("ACLSIM_STREAM_DELAY_US", 0);
      aclsim::g_delay_us = r.delay_us < 0 ? 0 : r.delay_us;
      aclsim::g_initialized = true;
    }
  }
  if (rc != ACL_SUCCESS) aclsim::fail(rc, "aclInit: already initialized (call aclFinalize first)");
  const char* family = aclsim::soc_family();
  ACLSIM_TRACE("aclInit(configPath=%s) = %d [simulator: devices=%u soc=%s family=%s%s stream_delay_us=%lld]",
               configPath ? configPath : "NULL", rc, r.device_count, aclsim::soc_name().c_str(), family,
               std::strcmp(family, "unknown") == 0 ? " (unknown SoC family: every op type available)" : "",
               static_cast<long long>(r.delay_us));
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclFinalize() {
  aclsim::Runtime& r = aclsim::rt();
  bool was;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    was = r.initialized;
  }
  aclError rc = ACL_SUCCESS;
  if (!was) {
    rc = aclsim::fail(ACL_ERROR_REPEAT_FINALIZE,
                      "aclFinalize: not initialized (aclInit missing or aclFinalize repeated)");
  } else {
    aclsim::destroy_all_streams();
    size_t leaks = aclsim::report_and_release_leaks();
    if (leaks > 0) rc = ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED;
    std::lock_guard<std::mutex> lock(r.mu);
    r.initialized = false;
    r.last_device = -1;
    aclsim::g_initialized = false;
  }
  ACLSIM_TRACE("aclFinalize() = %d", rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId) {
  aclsim::Runtime& r = aclsim::rt();
  aclError rc = ACL_SUCCESS;
  if (!aclsim::initialized()) {
    rc = aclsim::fail(ACL_ERROR_UNINITIALIZE, "aclrtSetDevice: aclInit has not been called");
  } else if (deviceId < 0 || static_cast<uint32_t>(deviceId) >= r.device_count) {
    rc = aclsim::fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtSetDevice: device id %d is out of range (device count %u)",
                      deviceId, r.device_count);
  } else {
    aclsim::t_device = deviceId;
    std::lock_guard<std::mutex> lock(r.mu);
    r.last_device = deviceId;
  }
  ACLSIM_TRACE("aclrtSetDevice(deviceId=%d) = %d", deviceId, rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t* deviceId) {
  aclsim::Runtime& r = aclsim::rt();
  aclError rc = ACL_SUCCESS;
  int32_t dev = aclsim::t_device;
  if (dev < 0) {
    std::lock_guard<std::mutex> lock(r.mu);
    dev = r.last_device;
  }
  if (deviceId == nullptr) {
    rc = aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId is NULL");
  } else if (dev < 0) {
    rc = aclsim::fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice: no device set (call aclrtSetDevice)");
  } else {
    *deviceId = dev;
  }
  ACLSIM_TRACE("aclrtGetDevice() = %d, *deviceId=%d", rc, rc == ACL_SUCCESS ? dev : -1);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t* count) {
  aclError rc = ACL_SUCCESS;
  if (count == nullptr) {
    rc = aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count is NULL");
  } else {
    // Before aclInit (the CANN EP validates its device_id option first) the environment decides.
    *count = aclsim::initialized() ? aclsim::rt().device_count : aclsim::env_device_count();
  }
  ACLSIM_TRACE("aclrtGetDeviceCount() = %d, *count=%u", rc, count ? *count : 0);
  return rc;
}

ACL_FUNC_VISIBILITY const char* aclrtGetSocName() {
  const char* name = aclsim::rt().soc_name.c_str();
  ACLSIM_TRACE("aclrtGetSocName() = \"%s\"", name);
  return name;
}

}  // extern "C"
