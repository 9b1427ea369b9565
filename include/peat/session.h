/*
 * peat/session.h — the run context of one training run (one rank).
 *
 * A session interns op names to small integer ids once (hot-path calls take
 * the id, never a string), owns the per-op call counters ("persistent kernel
 * calling": the same op is called every iteration, so (op, call index) names
 * one invocation), the current step and phase, the chosen backend, and the
 * run's log. The profiler and the injector are created on a session and so
 * share its counters and step.
 */
#ifndef PEAT_SESSION_H
#define PEAT_SESSION_H

#include <peat/backend.h>
#include <peat/core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct peat_session peat_session_t;

/* Training phase of an op invocation. */
typedef int32_t peat_phase_t;
enum peat_phase_code {
  PEAT_PHASE_FORWARD = 0,
  PEAT_PHASE_BACKWARD = 1,
  PEAT_PHASE_OPTIMIZER = 2,
  PEAT_PHASE_OTHER = 3 /* evaluation, data loading, anything else */
};

/* Severity of a log entry. */
typedef int32_t peat_log_level_t;
enum peat_log_level_code {
  PEAT_LOG_DEBUG = 0,
  PEAT_LOG_INFO = 1,
  PEAT_LOG_WARNING = 2,
  PEAT_LOG_ERROR = 3
};

typedef struct peat_session_options {
  uint32_t struct_size;  /* sizeof(peat_session_options_t); set by options_init */
  const char* backend;   /* backend name ("cpu", "cuda", "hip"); NULL or "" = "cpu".
                            Copied at create. Default NULL. */
  int32_t rank;          /* this process's rank, >= 0. Default 0. */
  int32_t world_size;    /* number of ranks, > rank. Default 1. */
  uint64_t seed;         /* seed of every random choice made on this session
                            (Philox key). Default 0x5EA7. */
  uint32_t max_ops;      /* capacity of the op table, in distinct op names,
                            1..1048576. Default 4096. */
  uint32_t max_log_entries; /* the log keeps the newest this many entries
                               (older ones are dropped and counted). Default 10000. */
  const char* run_name;  /* free-form name of the run, copied. Default NULL. */
} peat_session_options_t;

/* Fills *options with the defaults above and sets struct_size. NULL-safe. */
PEAT_API void peat_session_options_init(peat_session_options_t* options);

/* Creates a session. `options` may be NULL (all defaults). The session is
 * destroyed with peat_session_destroy, after every profiler and injector
 * created on it. Errors: NULL out -> INVALID_ARGUMENT; bad struct_size ->
 * VERSION_MISMATCH; rank/world_size/max_ops out of range -> INVALID_ARGUMENT;
 * backend that cannot be loaded -> UNAVAILABLE. */
PEAT_API peat_status_t peat_session_create(const peat_session_options_t* options,
                                           peat_session_t** out_session);

/* Destroys a session. NULL is a no-op. Not thread-safe with other calls on the
 * same session. */
PEAT_API void peat_session_destroy(peat_session_t* session);

/* Interns an op name ("aten::mm", "layer3.conv1/fwd_gemm") and returns its id,
 * the same id for the same name on every call. Ids are dense, starting at 0.
 * Errors: NULL or empty name -> INVALID_ARGUMENT; op table full ->
 * OUT_OF_MEMORY. Thread-safe. */
PEAT_API peat_status_t peat_session_intern_op(peat_session_t* session, const char* name,
                                              uint32_t* out_op);

/* Name of an interned op. *out_name is owned by the session and valid until it
 * is destroyed. Errors: unknown id -> NOT_FOUND. Thread-safe. */
PEAT_API peat_status_t peat_session_op_name(const peat_session_t* session, uint32_t op,
                                            const char** out_name);

/* Number of interned ops. Thread-safe. */
PEAT_API peat_status_t peat_session_op_count(const peat_session_t* session, uint32_t* out_count);

/* Claims the next call index of `op` (0 for its first call) and returns it:
 * the per-op counter that the profiler and the injector share. Lock-free.
 * Errors: unknown id -> NOT_FOUND. Thread-safe. */
PEAT_API peat_status_t peat_session_next_call(peat_session_t* session, uint32_t op,
                                              uint64_t* out_call);

/* Number of calls of `op` claimed so far. Thread-safe. */
PEAT_API peat_status_t peat_session_call_count(const peat_session_t* session, uint32_t op,
                                               uint64_t* out_count);

/* Sets / reads the current training step (>= 0) and phase. Thread-safe. */
PEAT_API peat_status_t peat_session_set_step(peat_session_t* session, int64_t step);
PEAT_API peat_status_t peat_session_step(const peat_session_t* session, int64_t* out_step);
PEAT_API peat_status_t peat_session_set_phase(peat_session_t* session, peat_phase_t phase);
PEAT_API peat_status_t peat_session_phase(const peat_session_t* session, peat_phase_t* out_phase);

/* The session's backend (owned by the registry). Thread-safe. */
PEAT_API peat_status_t peat_session_backend(const peat_session_t* session,
                                            peat_backend_t** out_backend);

/* The session's seed (options.seed). Thread-safe. */
PEAT_API peat_status_t peat_session_seed(const peat_session_t* session, uint64_t* out_seed);

/* Appends a message to the session's log (copied). Thread-safe. */
PEAT_API peat_status_t peat_session_log(peat_session_t* session, peat_log_level_t level,
                                        const char* message);

/* Number of entries the log holds now, and how many older ones were dropped
 * because the log was full. Thread-safe. */
PEAT_API peat_status_t peat_session_log_count(const peat_session_t* session, uint64_t* out_count,
                                              uint64_t* out_dropped);

/* Copies log entry `index` (0 = oldest kept) into `buffer` of `capacity` bytes,
 * NUL-terminated, and its level into *out_level (may be NULL). *out_needed
 * (may be NULL) receives the bytes needed including the NUL. Errors: index out
 * of range -> NOT_FOUND; capacity too small -> BUFFER_TOO_SMALL (the buffer
 * then holds a truncated copy). Thread-safe. */
PEAT_API peat_status_t peat_session_log_entry(const peat_session_t* session, uint64_t index,
                                              peat_log_level_t* out_level, char* buffer,
                                              size_t capacity, size_t* out_needed);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PEAT_SESSION_H */
