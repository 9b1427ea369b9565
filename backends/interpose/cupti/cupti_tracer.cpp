// libpeat-cupti-tracer.so: a CUDA injection library (CUDA_INJECTION64_PATH)
// that counts kernel launches per kernel name with CUPTI callbacks and writes
// them, with its status, as JSON at exit. It exports only InitializeInjection
// (exports.map), which the CUDA driver calls once when it initialises.
//
// Launches are counted at the driver API (cuLaunchKernel and its variants):
// runtime-API launches reach the driver too, so each launch counts once.
// CUPTI allows one subscriber per process; when another tool (Nsight, a
// profiler, a second tracer) holds it, the tracer reports
// PEAT_STATUS_UNAVAILABLE with the other subscriber's name and the program
// runs untraced. Messages also go to a PEAT session log, included in the JSON.
#include <cupti.h>

#include <peat/peat.h>

#include "backends/interpose/json_escape.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

struct Tracer {
  std::mutex mutex;
  std::unordered_map<std::string, uint64_t> calls;  // kernel name -> launches
  uint64_t launches = 0;
  peat_status_t status = PEAT_STATUS_OK;
  std::string message;
  peat_session_t* session = nullptr;
  CUpti_SubscriberHandle subscriber = nullptr;
  bool subscribed = false;
};

Tracer& tracer() {
  static Tracer t;
  return t;
}

using peat::interpose::json_escape;

std::string cupti_error(CUptiResult r) {
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown CUPTI error";
  return std::string(text) + " (" + std::to_string(static_cast<int>(r)) + ")";
}

// Records the tracer's status: one line on stderr and in the session log.
void report(peat_status_t status, const std::string& message) {
  Tracer& t = tracer();
  t.status = status;
  t.message = message;
  std::fprintf(stderr, "peat-cupti-tracer: %s (%s): %s\n",
               status == PEAT_STATUS_OK ? "PEAT_STATUS_OK" : "PEAT_STATUS_UNAVAILABLE", peat_status_string(status),
               message.c_str());
  if (t.session != nullptr)
    (void)peat_session_log(t.session, status == PEAT_STATUS_OK ? PEAT_LOG_INFO : PEAT_LOG_WARNING, message.c_str());
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (info->callbackSite != CUPTI_API_ENTER) return;
  const char* name = info->symbolName != nullptr ? info->symbolName : "<unnamed kernel>";
  Tracer& t = tracer();
  std::lock_guard lock(t.mutex);
  ++t.calls[name];
  ++t.launches;
}

std::string output_path() {
  const char* p = std::getenv("PEAT_CUPTI_OUTPUT");
  if (p != nullptr && *p != '\0') return p;
  return "peat-cupti-" + std::to_string(static_cast<long>(getpid())) + ".json";
}

void write_report() {
  Tracer& t = tracer();
  if (t.subscribed) {
    (void)cuptiUnsubscribe(t.subscriber);
    t.subscribed = false;
  }
  std::vector<std::pair<std::string, uint64_t>> kernels;
  uint64_t launches = 0;
  {
    std::lock_guard lock(t.mutex);
    kernels.assign(t.calls.begin(), t.calls.end());
    launches = t.launches;
  }
  std::sort(kernels.begin(), kernels.end(),
            [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  std::string json = "{\"tracer\":\"peat-cupti-tracer\",\"status\":\"" +
                     std::string(t.status == PEAT_STATUS_OK ? "ok" : "unavailable") +
                     "\",\"peat_status\":" + std::to_string(t.status) + ",\"message\":\"" + json_escape(t.message) +
                     "\",\"launches\":" + std::to_string(launches) + ",\"kernels\":[";
  for (std::size_t i = 0; i < kernels.size(); ++i)
    json += std::string(i ? "," : "") + "{\"name\":\"" + json_escape(kernels[i].first) +
            "\",\"calls\":" + std::to_string(kernels[i].second) + "}";
  json += "],\"log\":[";
  if (t.session != nullptr) {
    uint64_t n = 0;
    (void)peat_session_log_count(t.session, &n, nullptr);
    for (uint64_t i = 0; i < n; ++i) {
      char buffer[1024];
      if (peat_session_log_entry(t.session, i, nullptr, buffer, sizeof buffer, nullptr) == PEAT_STATUS_NOT_FOUND)
        break;
      json += std::string(i ? "," : "") + "\"" + json_escape(buffer) + "\"";
    }
  }
  json += "]}\n";
  const std::string path = output_path();
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fputs(json.c_str(), f);
    std::fclose(f);
  } else {
    std::fprintf(stderr, "peat-cupti-tracer: cannot write %s\n", path.c_str());
  }
  peat_session_destroy(t.session);
  t.session = nullptr;
}

}  // namespace

// Called by the CUDA driver (CUDA_INJECTION64_PATH) once, at initialisation.
// Returns 1 in every case: a tracer that cannot subscribe leaves the program
// running untraced, with its reason in the report.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::once_flag once;
  std::call_once(once, [] {
    Tracer& t = tracer();
    peat_session_options_t options;
    peat_session_options_init(&options);
    options.run_name = "peat-cupti-tracer";
    if (peat_session_create(&options, &t.session) != PEAT_STATUS_OK) t.session = nullptr;

    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "PEAT launch tracer";
    char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 64] = {0};
    params.oldSubscriberName = other;
    params.oldSubscriberSize = sizeof other;
    const CUptiResult r = cuptiSubscribe_v2(&t.subscriber, &on_callback, nullptr, &params);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      report(PEAT_STATUS_UNAVAILABLE, std::string("another CUPTI subscriber is active (") +
                                          (other[0] != '\0' ? other : "unnamed") +
                                          "); kernel launches are not traced");
    } else if (r != CUPTI_SUCCESS) {
      report(PEAT_STATUS_UNAVAILABLE, "cuptiSubscribe failed: " + cupti_error(r) + "; kernel launches are not traced");
    } else {
      t.subscribed = true;
      const CUpti_CallbackId launches[] = {
          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,         CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};
      for (const CUpti_CallbackId id : launches) {
        const CUptiResult e = cuptiEnableCallback(1, t.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
        if (e != CUPTI_SUCCESS) {
          report(PEAT_STATUS_UNAVAILABLE, "cuptiEnableCallback failed: " + cupti_error(e));
          break;
        }
      }
      if (t.status == PEAT_STATUS_OK) report(PEAT_STATUS_OK, "tracing kernel launches");
    }
    std::atexit(&write_report);
  });
  return 1;
}
