// The process-wide PEAT state of an interposer: one session, and the profiler
// and injector the environment asks for, created on the first intercepted
// call and closed at exit (the trace footer, the log file). Any problem turns
// interposition off with one line, and the host program runs as without PEAT.
#pragma once

#include <peat/peat.h>

#include <atomic>
#include <string>
#include <vector>

namespace peat::interpose {

// Defined by each interposer: the session backend when PEAT_INTERPOSE_BACKEND
// is unset ("cuda" for cuBLAS, "hip" for rocBLAS/hipBLAS), and the name used
// in messages and the trace header.
extern const char* const kDefaultBackend;
extern const char* const kInterposerName;

class Runtime {
 public:
  // The runtime, configured on first use (thread-safe).
  static Runtime& get();

  bool enabled() const { return enabled_.load(std::memory_order_acquire); }
  peat_session_t* session() const { return session_; }
  peat_profiler_t* profiler() const { return profiler_; }
  peat_injector_t* injector() const { return injector_; }
  const peat_backend_api_t* backend_table() const { return table_; }
  int32_t device_type() const { return device_type_; }
  bool has_run_both() const { return has_run_both_; }
  bool has_candidates() const { return has_candidates_; }
  // Whether an injector policy (PEAT_INTERPOSE_FI) names this entry point
  // (glob match): an entry no policy names never fires, and with no profiler
  // its calls only need counting. Decided once per entry by route_gemm.
  bool may_fire(const char* entry) const;

  // A warning, once per key: into the session log and on stderr.
  void warn_once(const std::string& key, const std::string& message);
  // One line on stderr (and in the log file when configured), once per key;
  // usable before and without a session.
  static void say_once(const std::string& key, const std::string& message);

 private:
  Runtime() = default;
  void start();
  void stop();  // at exit
  static void at_exit();
  void teardown();

  std::atomic<bool> enabled_{false};  // read on every intercepted call
  peat_session_t* session_ = nullptr;
  peat_profiler_t* profiler_ = nullptr;
  peat_injector_t* injector_ = nullptr;
  const peat_backend_api_t* table_ = nullptr;
  int32_t device_type_ = 1;
  bool has_run_both_ = false;
  bool has_candidates_ = false;
  std::vector<std::string> policy_globs_;
  std::string log_path_;
};

}  // namespace peat::interpose
