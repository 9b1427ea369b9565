// The interposer's process-wide PEAT state (see runtime.hpp).
#include "backends/interpose/runtime/runtime.hpp"

#include "backends/interpose/runtime/config.hpp"
#include "backends/interpose/json_escape.hpp"

#include <cstdio>
#include <cstdlib>
#include <fnmatch.h>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace peat::interpose {

namespace {

std::mutex g_say_mutex;
std::set<std::string> g_said;

using peat::interpose::json_escape;

const char* log_path() {
  const char* p = std::getenv("PEAT_INTERPOSE_LOG");
  return p != nullptr && *p != '\0' ? p : nullptr;
}

// Appends one JSON line to the log file (when configured).
void log_line(const std::string& json) {
  const char* path = log_path();
  if (path == nullptr) return;
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%s\n", json.c_str());
    std::fclose(f);
  }
}

const char* level_name(peat_log_level_t level) {
  switch (level) {
    case PEAT_LOG_DEBUG: return "debug";
    case PEAT_LOG_INFO: return "info";
    case PEAT_LOG_WARNING: return "warning";
    default: return "error";
  }
}

}  // namespace

Runtime& Runtime::get() {
  static Runtime runtime;
  static std::once_flag once;
  std::call_once(once, [] { runtime.start(); });
  return runtime;
}

void Runtime::say_once(const std::string& key, const std::string& message) {
  {
    std::lock_guard lock(g_say_mutex);
    if (!g_said.insert(key).second) return;
  }
  std::fprintf(stderr, "%s: %s\n", kInterposerName, message.c_str());
  log_line(std::string("{\"event\":\"message\",\"text\":\"") + json_escape(message) + "\"}");
}

void Runtime::warn_once(const std::string& key, const std::string& message) {
  {
    std::lock_guard lock(g_say_mutex);
    if (g_said.count(key) != 0) return;
  }
  if (session_ != nullptr) (void)peat_session_log(session_, PEAT_LOG_WARNING, message.c_str());
  say_once(key, message);
}

void Runtime::start() {
  Config config;
  try {
    config = read_config(kDefaultBackend);
  } catch (const ConfigError& e) {
    say_once("config", std::string(e.what()) + "; interposition is off, calls pass through");
    return;
  }
  if (!config.enabled) return;
  log_path_ = config.log_path;
  if (!log_path_.empty()) {
    if (FILE* f = std::fopen(log_path_.c_str(), "w")) {
      std::fprintf(f, "{\"event\":\"start\",\"interposer\":\"%s\",\"backend\":\"%s\",\"fi\":\"%s\",\"trace\":\"%s\"}\n",
                   kInterposerName, json_escape(config.backend).c_str(), json_escape(config.fi_text).c_str(),
                   json_escape(config.trace_path).c_str());
      std::fclose(f);
    } else {
      std::fprintf(stderr, "%s: cannot write PEAT_INTERPOSE_LOG '%s'; messages go to stderr only\n", kInterposerName,
                   log_path_.c_str());
    }
  }
  const auto refuse = [&](const std::string& what) {
    say_once("start", what + ": " + peat_last_error_message() + "; interposition is off, calls pass through");
    teardown();
  };

  peat_session_options_t so;
  peat_session_options_init(&so);
  so.backend = config.backend.c_str();
  so.run_name = kInterposerName;
  if (config.has_seed) so.seed = config.seed;
  if (peat_session_create(&so, &session_) != PEAT_STATUS_OK) {
    session_ = nullptr;
    return refuse("cannot create a PEAT session on backend '" + config.backend + "'");
  }
  peat_backend_t* backend = nullptr;
  if (peat_session_backend(session_, &backend) != PEAT_STATUS_OK || (table_ = peat_backend_table(backend)) == nullptr)
    return refuse("the session has no backend table");
  device_type_ = table_->device_type;
  if (device_type_ != kDLCPU) {
    // A device backend without a usable device (no driver, no GPU) cannot
    // stage or inject anything: say so once instead of once per entry point.
    int32_t devices = 0;
    const peat_status_t st = table_->device_count(&devices);
    if (st != PEAT_STATUS_OK || devices <= 0) {
      const std::string why = st != PEAT_STATUS_OK ? std::string(table_->last_error()) : std::string("0 devices");
      say_once("start", "backend '" + config.backend + "' has no usable device (" + why +
                            "); interposition is off, calls pass through");
      teardown();
      return;
    }
  }

  if (!config.trace_path.empty()) {
    peat_profiler_options_t po;
    peat_profiler_options_init(&po);
    po.path = config.trace_path.c_str();
    po.framework = kInterposerName;
    if (peat_profiler_create(session_, &po, &profiler_) != PEAT_STATUS_OK) {
      profiler_ = nullptr;
      return refuse("PEAT_INTERPOSE_TRACE '" + config.trace_path + "': cannot create the trace");
    }
    for (std::size_t i = 0; i < config.rules.size(); ++i) {
      RuleConfig& r = config.rules[i];
      r.rule.op_glob = r.op.c_str();
      if (peat_profiler_add_rule(profiler_, &r.rule) != PEAT_STATUS_OK)
        return refuse("PEAT_INTERPOSE_SAMPLE rule " + std::to_string(i + 1));
    }
  }
  if (!config.policies.empty()) {
    if (peat_injector_create(session_, nullptr, &injector_) != PEAT_STATUS_OK) {
      injector_ = nullptr;
      return refuse("cannot create the injector");
    }
    for (std::size_t i = 0; i < config.policies.size(); ++i) {
      PolicyConfig& p = config.policies[i];
      p.policy.op_pattern = p.op.c_str();
      policy_globs_.push_back(p.op);
      p.policy.spec = p.has_model ? &p.spec : nullptr;
      if (peat_injector_add_policy(injector_, &p.policy, nullptr) != PEAT_STATUS_OK)
        return refuse("PEAT_INTERPOSE_FI policy " + std::to_string(i + 1));
      if (!p.candidate.empty()) {
        if (peat_injector_set_candidate_symbol(injector_, p.op.c_str(), p.candidate.c_str(), nullptr) !=
            PEAT_STATUS_OK)
          return refuse("PEAT_INTERPOSE_FI policy " + std::to_string(i + 1) + ", candidate '" + p.candidate + "'");
        has_candidates_ = true;
        if (p.policy.action == PEAT_ACTION_RUN_BOTH) has_run_both_ = true;
      }
    }
  }
  enabled_ = true;
  // Registered after the session, profiler and injector exist, so it runs
  // before the destructors of whatever libpeat constructed for them.
  std::atexit(&Runtime::at_exit);
}

void Runtime::at_exit() { get().stop(); }

bool Runtime::may_fire(const char* entry) const {
  for (const std::string& glob : policy_globs_)
    if (::fnmatch(glob.c_str(), entry, 0) == 0) return true;
  return false;
}

void Runtime::stop() {
  if (!enabled_) return;
  enabled_ = false;  // later calls (other atexit handlers) pass through
  if (profiler_ != nullptr && peat_profiler_close(profiler_) != PEAT_STATUS_OK)
    say_once("close", std::string("closing the trace failed: ") + peat_last_error_message());
  if (!log_path_.empty()) {
    std::string lines;
    uint32_t ops = 0;
    (void)peat_session_op_count(session_, &ops);
    for (uint32_t op = 0; op < ops; ++op) {
      const char* name = nullptr;
      uint64_t calls = 0;
      if (peat_session_op_name(session_, op, &name) != PEAT_STATUS_OK) continue;
      (void)peat_session_call_count(session_, op, &calls);
      lines += "{\"event\":\"calls\",\"op\":\"" + json_escape(name) + "\",\"calls\":" + std::to_string(calls) + "}\n";
    }
    if (injector_ != nullptr) {
      uint64_t firings = 0, dropped = 0;
      (void)peat_injector_firing_count(injector_, &firings, &dropped);
      lines += "{\"event\":\"firings\",\"count\":" + std::to_string(firings) + ",\"dropped\":" +
               std::to_string(dropped) + "}\n";
    }
    uint64_t entries = 0;
    (void)peat_session_log_count(session_, &entries, nullptr);
    for (uint64_t i = 0; i < entries; ++i) {
      char buffer[1024];
      peat_log_level_t level = PEAT_LOG_INFO;
      if (peat_session_log_entry(session_, i, &level, buffer, sizeof buffer, nullptr) == PEAT_STATUS_NOT_FOUND) break;
      lines += std::string("{\"event\":\"log\",\"level\":\"") + level_name(level) + "\",\"text\":\"" +
               json_escape(buffer) + "\"}\n";
    }
    if (FILE* f = std::fopen(log_path_.c_str(), "a")) {
      std::fputs(lines.c_str(), f);
      std::fclose(f);
    }
    // One line per firing, in the injector's own format (no "event" key).
    if (injector_ != nullptr) (void)peat_injector_write_log(injector_, log_path_.c_str(), 1);
  }
  teardown();
}

void Runtime::teardown() {
  enabled_ = false;
  peat_injector_destroy(injector_);
  injector_ = nullptr;
  peat_profiler_destroy(profiler_);
  profiler_ = nullptr;
  peat_session_destroy(session_);
  session_ = nullptr;
}

}  // namespace peat::interpose
