// C entry points of peat/session.h: check, convert, forward.
#include <peat/session.h>

#include "bindings/c/barrier.hpp"
#include "lib/backend/backend.hpp"
#include "lib/session/session.hpp"

#include <memory>

using namespace peat::impl;  // the C layer forwards to the core (lib/)

extern "C" {

PEAT_API void peat_session_options_init(peat_session_options_t* p) { if (p) *p = session::default_session_options(); }

PEAT_API peat_status_t peat_session_create(const peat_session_options_t* options, peat_session_t** out_session) {
  return c_call(__func__, [&] {
    require_arg(out_session, "out_session");
    const auto opts = read_options(options, "options", peat_session_options_init);
    *out_session = std::make_unique<peat_session>(opts).release();
  });
}

PEAT_API void peat_session_destroy(peat_session_t* session) { delete session; }

PEAT_API peat_status_t peat_session_intern_op(peat_session_t* session, const char* name, uint32_t* out_op) {
  return c_with(__func__, session, "session", [&](auto& s) {
    require_arg(name, "name");
    require_arg(out_op, "out_op");
    *out_op = s.intern_op(name);
  });
}

PEAT_API peat_status_t peat_session_op_name(const peat_session_t* session, uint32_t op, const char** out_name) {
  return c_get(__func__, session, "session", out_name, "out_name", [&](auto& s) { return s.op_name(op).c_str(); });
}

PEAT_API peat_status_t peat_session_op_count(const peat_session_t* session, uint32_t* out_count) {
  return c_get(__func__, session, "session", out_count, "out_count", [](auto& s) { return s.op_count(); });
}

PEAT_API peat_status_t peat_session_next_call(peat_session_t* session, uint32_t op, uint64_t* out_call) {
  return c_get(__func__, session, "session", out_call, "out_call", [&](auto& s) { return s.next_call(op); });
}

PEAT_API peat_status_t peat_session_call_count(const peat_session_t* session, uint32_t op, uint64_t* out_count) {
  return c_get(__func__, session, "session", out_count, "out_count", [&](auto& s) { return s.call_count(op); });
}

PEAT_API peat_status_t peat_session_set_step(peat_session_t* session, int64_t step) {
  return c_with(__func__, session, "session", [&](auto& s) { s.set_step(step); });
}

PEAT_API peat_status_t peat_session_step(const peat_session_t* session, int64_t* out_step) {
  return c_get(__func__, session, "session", out_step, "out_step", [](auto& s) { return s.step(); });
}

PEAT_API peat_status_t peat_session_set_phase(peat_session_t* session, peat_phase_t phase) {
  return c_with(__func__, session, "session", [&](auto& s) { s.set_phase(phase); });
}

PEAT_API peat_status_t peat_session_phase(const peat_session_t* session, peat_phase_t* out_phase) {
  return c_get(__func__, session, "session", out_phase, "out_phase", [](auto& s) { return s.phase(); });
}

PEAT_API peat_status_t peat_session_backend(const peat_session_t* session, peat_backend_t** out_backend) {
  return c_get(__func__, session, "session", out_backend, "out_backend",
               [](auto& s) { return static_cast<peat_backend_t*>(&s.backend()); });
}

PEAT_API peat_status_t peat_session_seed(const peat_session_t* session, uint64_t* out_seed) {
  return c_get(__func__, session, "session", out_seed, "out_seed", [](auto& s) { return s.seed(); });
}

PEAT_API peat_status_t peat_session_log(peat_session_t* session, peat_log_level_t level, const char* message) {
  return c_with(__func__, session, "session", [&](auto& s) {
    require_arg(message, "message");
    s.log(level, message);
  });
}

PEAT_API peat_status_t peat_session_log_count(const peat_session_t* session, uint64_t* out_count,
                                              uint64_t* out_dropped) {
  return c_with(__func__, session, "session", [&](const auto& s) {
    require_arg(out_count, "out_count");
    *out_count = s.log_count();
    set_optional(out_dropped, s.log_dropped());
  });
}

PEAT_API peat_status_t peat_session_log_entry(const peat_session_t* session, uint64_t index,
                                              peat_log_level_t* out_level, char* buffer, size_t capacity,
                                              size_t* out_needed) {
  return c_with(__func__, session, "session",
                [&](const auto& s) { s.log_entry_to(index, out_level, buffer, capacity, out_needed); });
}

}  // extern "C"
