/*
 * peat/profiler.h — records a training run at operation granularity into a
 * trace file (peat/trace.h).
 *
 * A profiler is created on a session (peat/session.h) and shares its op ids,
 * per-op call counters, step and phase with the injector. At an op boundary
 * the caller records the invocation: op, phase, module path, step, call index,
 * typed attributes, input and output tensors. Checkpoints (named tensor sets),
 * per-step scalars (loss, accuracy, learning rate) and step markers are
 * recorded too.
 *
 * Which op calls are recorded is decided by sampling rules per op glob (every
 * N-th call, first K calls, a step window) and a byte budget for the whole
 * trace. Recording is asynchronous: a record call copies the tensors (CPU
 * tensors directly; device tensors through the backend's asynchronous
 * device-to-host staging) into a bounded in-memory queue and returns; oneTBB
 * workers compress the payloads and one writer thread appends the records to
 * the file in the order the calls were made. When the queue is full the call
 * blocks or drops the record (and counts it), as the options say.
 *
 * A write error (ENOSPC, EIO, a file size limit, a vanished directory) stops
 * recording: it is logged on the session (PEAT_LOG_ERROR), later record calls
 * return PEAT_STATUS_IO_ERROR without doing anything, flush and close return
 * it too, and peat_profiler_stats reports it. The training itself is never
 * disturbed: no PEAT call aborts or throws. The file then holds every record
 * written before the error and can be read with peat_trace_recover.
 *
 * Thread safety: every function except destroy may be called from several
 * threads at once on the same profiler.
 */
#ifndef PEAT_PROFILER_H
#define PEAT_PROFILER_H

#include <peat/core.h>
#include <peat/session.h>
#include <peat/trace.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct peat_profiler peat_profiler_t;

/* What a record call does when the queue is full. */
typedef int32_t peat_queue_policy_t;
enum peat_queue_policy_code {
  PEAT_QUEUE_BLOCK = 0, /* wait until the writer has made room */
  PEAT_QUEUE_DROP = 1   /* drop the record and count it (stats.dropped_queue_full) */
};

/* call_index value that asks the profiler to claim the op's next call index
 * from the session (peat_session_next_call). */
#define PEAT_CALL_NEXT UINT64_MAX

/* A free-form key-value tag of the trace header, e.g. {"model", "resnet50"}. */
typedef struct peat_profiler_tag {
  const char* key;
  const char* value;
} peat_profiler_tag_t;

typedef struct peat_profiler_options {
  uint32_t struct_size;       /* sizeof(peat_profiler_options_t); set by options_init */
  peat_trace_codec_t codec;   /* tensor payload codec. Default PEAT_TRACE_CODEC_SHUFFLE_ZSTD. */
  const char* path;           /* trace file to create (truncated if it exists); required, copied */
  const char* framework;      /* header: framework name, e.g. "pytorch 2.3". Default "" (copied) */
  const char* device;         /* header: device name; NULL = the backend's device 0 name */
  const char* vendor;         /* header: vendor; NULL = the backend's device 0 vendor */
  const peat_profiler_tag_t* tags; /* n_tags header tags (copied); may be NULL when n_tags == 0 */
  uint32_t n_tags;
  int32_t zstd_level;         /* zstd level 1..19 for SHUFFLE_ZSTD. Default 1 (fastest). */
  uint64_t queue_bytes;       /* capacity of the in-memory queue in bytes (tensor bytes plus
                                 a per-record estimate); >= 1 MiB. Default 256 MiB. A single
                                 record larger than the queue is accepted when the queue is empty.
                                 Besides the queue, buffers of written records are kept for
                                 reuse: at most a quarter of queue_bytes, and at most 64 MiB.
                                 On Linux a tensor copy of 2 MiB or more is a mapping of its own,
                                 2 MiB-aligned and advised MADV_HUGEPAGE (one page fault per
                                 2 MiB where transparent huge pages are on), its length rounded
                                 up to whole 2 MiB: a copy of just over 2 MiB can take 4 MiB
                                 of memory beyond what the queue and pool bounds count. */
  peat_queue_policy_t full_queue_policy; /* Default PEAT_QUEUE_BLOCK. */
  int32_t default_record;     /* 1: op calls no rule matches are recorded (every call);
                                 0: they are not. Default 1. */
  uint64_t byte_budget;       /* upper bound of the trace's size in bytes (0 = none). A record
                                 is dropped (stats.dropped_budget) when the bytes written plus
                                 the uncompressed size of queued records and of this one would
                                 exceed it; decided before the record's tensors are copied.
                                 Default 0. */
  /* ---- appended in library 0.2 (trace format 1.2) ---- */
  uint64_t content_index_entries; /* tensors are stored once per trace: a host tensor of at least
                                 4 KiB whose bytes (XXH3-128, byte count and dtype) equal a tensor
                                 already recorded is written as a reference to it
                                 (docs/trace-format.md, "Tensor references"). This caps the
                                 index of recorded contents (least recently used forgotten
                                 first; about 160 bytes each). 0 stores every tensor in its own
                                 record. Default 65536 (about 10 MiB).
                                 With content addressing on and the SHUFFLE_ZSTD codec, a later
                                 version of a tensor (same op, slot, index, dtype and shape: a
                                 weight after an optimizer step) is written as an XOR delta
                                 against the version stored whole before it (format 1.3,
                                 docs/trace-format.md "Delta tensors"); the copies of those
                                 bases take at most queue_bytes (least recently used forgotten
                                 first). 0 turns deltas off too. */
} peat_profiler_options_t;

/* Fills *options with the defaults above and sets struct_size. NULL-safe. */
PEAT_API void peat_profiler_options_init(peat_profiler_options_t* options);

/* Creates a profiler on `session` and the trace file options->path (header
 * written at once, with rank and world size from the session and the library
 * version). The session must outlive the profiler.
 * Errors: NULL session/options/out or NULL path -> INVALID_ARGUMENT; bad
 * struct_size -> VERSION_MISMATCH; unknown codec, policy, zstd level out of
 * range, queue_bytes < 1 MiB -> INVALID_ARGUMENT; a string (framework,
 * device, vendor, tags, the session's run name) that is not valid UTF-8 ->
 * INVALID_ARGUMENT; path exists but is not a regular file (a FIFO, a device)
 * -> INVALID_ARGUMENT, without blocking; file cannot be created -> NOT_FOUND
 * (missing directory) or IO_ERROR. */
PEAT_API peat_status_t peat_profiler_create(peat_session_t* session, const peat_profiler_options_t* options,
                                            peat_profiler_t** out_profiler);

/* Closes the profiler (as peat_profiler_close, ignoring its errors) and frees
 * it. NULL is a no-op. Not thread-safe with other calls on the same profiler. */
PEAT_API void peat_profiler_destroy(peat_profiler_t* profiler);

/* ------------------------------------------------------------- sampling -- */

/* How every_n counts an op's calls. */
typedef int32_t peat_sample_count_t;
enum peat_sample_count_code {
  /* Per call site (the default). A site is an op's k-th call within a step:
   * a Linear layer's backward calls the same mm twice per step (the input
   * gradient, then the weight gradient), and counting the op's calls would
   * record only one of them at any even every_n. Site k is recorded at the
   * j-th step that reaches it when (j + k) is a multiple of every_n, so every
   * site is recorded at 1 in every_n of its steps, and the sites take turns
   * (each step records about 1/every_n of them). Within one step, and when
   * no step is ever marked, this is the call-index rule below. */
  PEAT_SAMPLE_BY_SITE = 0,
  /* Per call index: record calls whose index is a multiple of every_n (the
   * rule of library 0.1; it skips call sites systematically when an op's
   * calls per step share a factor with every_n). */
  PEAT_SAMPLE_BY_CALL = 1
};

/* A sampling rule. Rules are consulted in the order they were added; the first
 * whose op_glob matches the op's name decides whether a call is recorded. */
typedef struct peat_sample_rule {
  uint32_t struct_size; /* sizeof(peat_sample_rule_t); set by peat_sample_rule_init */
  int32_t record;       /* 1: record the calls selected below; 0: never record matching
                           ops. Default 1. */
  const char* op_glob;  /* shell glob over op names ('*', '?', '[...]'); required, copied */
  uint64_t every_n;     /* record 1 in every_n calls, counted as count_by says (0 or 1 =
                           every call). Default 1. */
  uint64_t first_k;     /* record only calls with index < first_k (0 = no limit). Default 0. */
  int64_t step_begin;   /* record only at steps in [step_begin, step_end). Default 0 .. INT64_MAX. */
  int64_t step_end;
  /* ---- appended in 0.2; older callers' smaller struct_size keeps the default ---- */
  peat_sample_count_t count_by; /* how every_n counts. Default PEAT_SAMPLE_BY_SITE. The
                           site rule assumes that each op's calls within a step are
                           decided in call-index order (as one training thread does). */
  int32_t reserved;     /* 0 */
} peat_sample_rule_t;

/* Fills *rule with the defaults above and sets struct_size. NULL-safe. */
PEAT_API void peat_sample_rule_init(peat_sample_rule_t* rule);

/* Appends a rule. Errors: NULL/empty op_glob -> INVALID_ARGUMENT; record not 0
 * or 1, step_end < step_begin, unknown count_by -> INVALID_ARGUMENT; bad struct_size ->
 * VERSION_MISMATCH. Thread-safe; applies to calls decided after it returns. */
PEAT_API peat_status_t peat_profiler_add_rule(peat_profiler_t* profiler, const peat_sample_rule_t* rule);

/* Whether the rules select call `call` of op `op` at `step` (-1 = the
 * session's current step): *out_record = 1 or 0. Lets a caller skip preparing
 * tensors for a call that will not be recorded (and copy the inputs an op
 * will overwrite before it runs: a record holds the inputs as the kernel
 * read them and the outputs as it wrote them). Does not claim a call index
 * and ignores the byte budget; asking again about the same call gives the
 * same answer. Errors: unknown op -> NOT_FOUND. */
PEAT_API peat_status_t peat_profiler_should_record(peat_profiler_t* profiler, uint32_t op, uint64_t call,
                                                   int64_t step, int32_t* out_record);

/* ------------------------------------------------------------ recording -- */

/* One op invocation to record. Tensors are borrowed views, copied before the
 * call returns (CPU tensors, any strides) or staged asynchronously (device
 * tensors of the session's backend, which must be contiguous; the copy is
 * ordered on `stream`, so the caller keeps the device memory unchanged until
 * work queued after the call on that stream). Each tensor's layout is kept
 * with it (DLTensor strides; the payload is compact): playback hands the
 * candidate its inputs with the same strides.
 *
 * The contract a trace stands on: `inputs` are the tensors as the kernel
 * read them and `outputs` as it wrote them. A caller that records after the
 * op ran must copy, before it runs, the inputs the op overwrites (in-place
 * ops, out= arguments, running statistics, optimizer state) and pass the
 * copies; the overwritten values, as the op left them, belong among the
 * outputs (peat.torch appends them after the op's own outputs and lists
 * their argument positions in the int-array attribute "written_args"). */
typedef struct peat_op_record {
  uint32_t struct_size;            /* sizeof(peat_op_record_t); set by peat_op_record_init */
  uint32_t op;                     /* interned op id (peat_session_intern_op) */
  uint64_t call_index;             /* the call's index, or PEAT_CALL_NEXT (default) to claim it */
  int64_t step;                    /* -1 (default) = the session's current step */
  peat_phase_t phase;              /* -1 (default) = the session's current phase */
  int32_t force;                   /* 1: ignore the sampling rules (the budget still applies). Default 0. */
  const char* module_path;         /* layer or module path, e.g. "encoder.layer3.attn"; NULL = "" */
  const peat_attr_t* attrs;        /* n_attrs typed attributes (copied) */
  uint64_t n_attrs;
  const DLTensor* const* inputs;   /* n_inputs input tensors */
  const char* const* input_names;  /* NULL, or n_inputs names (entries may be NULL) */
  uint64_t n_inputs;
  const DLTensor* const* outputs;  /* n_outputs output tensors */
  const char* const* output_names; /* NULL, or n_outputs names (entries may be NULL) */
  uint64_t n_outputs;
  void* stream;                    /* backend stream for staging device tensors; NULL = default */
} peat_op_record_t;

/* Fills *record with the defaults above and sets struct_size. NULL-safe. */
PEAT_API void peat_op_record_init(peat_op_record_t* record);

/* Records an op invocation if the sampling rules (or `force`) select it and the
 * budget and queue allow. *out_recorded (may be NULL) = 1 when the record was
 * queued, 0 when it was not selected or was dropped. *out_call (may be NULL)
 * receives the call index used (claimed or given).
 * Errors: NULL profiler/record -> INVALID_ARGUMENT; unknown op -> NOT_FOUND;
 * bad phase, attribute type, tensor view or counts -> INVALID_ARGUMENT;
 * a string (op name, module path, attribute key or value, tensor name) that
 * is not valid UTF-8, or metadata (names, attributes, shapes) above the 64 MiB
 * that trace readers accept by default -> INVALID_ARGUMENT, naming the field
 * (a record that is acknowledged is one every default reader reads);
 * device tensor the backend cannot stage (other device type, non-contiguous)
 * -> UNSUPPORTED; after close -> BAD_STATE; after a write error -> IO_ERROR. */
PEAT_API peat_status_t peat_profiler_record_op(peat_profiler_t* profiler, const peat_op_record_t* record,
                                               int32_t* out_recorded, uint64_t* out_call);

/* Records a checkpoint: `n` tensors with names (names may be NULL, entries may
 * be NULL) at `step` (-1 = the session's step). Not subject to sampling rules;
 * subject to the budget and the queue. *out_recorded as for record_op.
 * Errors as peat_profiler_record_op. */
PEAT_API peat_status_t peat_profiler_record_checkpoint(peat_profiler_t* profiler, const char* name, int64_t step,
                                                       const char* const* names, const DLTensor* const* tensors,
                                                       uint64_t n, void* stream, int32_t* out_recorded);

/* Records one scalar (e.g. "loss", "accuracy", "lr") at `step` (-1 = the
 * session's step). Errors: NULL/empty name -> INVALID_ARGUMENT; after close ->
 * BAD_STATE; after a write error -> IO_ERROR. */
PEAT_API peat_status_t peat_profiler_record_scalar(peat_profiler_t* profiler, const char* name, int64_t step,
                                                   double value);

/* Sets the session's step to `step` (>= 0) and records a step marker.
 * Errors: negative step -> INVALID_ARGUMENT; after close -> BAD_STATE; after a
 * write error -> IO_ERROR (the session's step is set all the same). */
PEAT_API peat_status_t peat_profiler_mark_step(peat_profiler_t* profiler, int64_t step);

/* Waits until every record queued before the call is in the file (written
 * with write(2); this call does not fsync: the writer flushes the file to disk
 * on its own, on a thread beside it, each time 64 MiB more were written, see
 * docs/trace-format.md "Crash safety"). Errors: a write or flush error -> IO_ERROR. */
PEAT_API peat_status_t peat_profiler_flush(peat_profiler_t* profiler);

/* Flushes, writes the footer index and closes the file. Later record calls
 * return BAD_STATE; a second close returns the first one's status.
 * Errors: a write error (now or earlier) -> IO_ERROR. */
PEAT_API peat_status_t peat_profiler_close(peat_profiler_t* profiler);

/* Counters of a profiler. */
typedef struct peat_profiler_stats_s {
  uint32_t struct_size;          /* sizeof(peat_profiler_stats_t), set by the caller */
  peat_status_t error;           /* OK, or the write error that stopped recording */
  uint64_t records_written;      /* records in the file */
  uint64_t records_pending;      /* records queued and not yet written */
  uint64_t not_sampled;          /* op calls the sampling rules did not select */
  uint64_t dropped_queue_full;   /* records dropped by PEAT_QUEUE_DROP */
  uint64_t dropped_budget;       /* records dropped by the byte budget */
  uint64_t dropped_error;        /* records lost to a write or encoding error */
  uint64_t raw_bytes;            /* tensor bytes (uncompressed) of the records written */
  uint64_t file_bytes;           /* bytes in the file */
  uint64_t queue_bytes;          /* bytes held by the queue now */
} peat_profiler_stats_t;

/* Fills *out (whose struct_size the caller set). The message of a write error
 * is in the session log. Errors: NULL -> INVALID_ARGUMENT; struct_size too
 * small -> VERSION_MISMATCH. */
PEAT_API peat_status_t peat_profiler_stats(const peat_profiler_t* profiler, peat_profiler_stats_t* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PEAT_PROFILER_H */
