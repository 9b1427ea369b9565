/*
 * peat/playback.h — Playback fault injection: replay recorded op invocations
 * of a trace through a candidate kernel, offline, and compare with the
 * recorded golden outputs.
 *
 * For every op record of a trace (peat/trace.h) that a filter selects, a
 * playback loads the recorded inputs and attributes, runs the candidate (a
 * peat_kernel_fn of peat/injector.h, or one loaded from "libx.so:symbol")
 * into fresh output buffers of the recorded shapes and dtypes, and compares
 * each output with the recorded golden output through the analyzer
 * (peat/analyzer.h), giving one error signature per output. Optionally the
 * candidate runs twice on the same inputs, and the two runs are compared too
 * (non-determinism). Signatures are merged per op name and per layer (the
 * record's module path).
 *
 * A record whose candidate fails (returns non-zero), changes an output's
 * shape, dtype or data pointer, or whose tensors cannot be read, is kept in
 * the results with a status and a message naming the trace file, the record
 * number and the op; playback goes on with the next record.
 * A candidate that crashes the process, never returns, or writes outside its
 * outputs is survivable only with options.isolate = 1 (a forked worker per
 * call, guard pages around the outputs, a time limit): it then fails its
 * record in the same way.
 *
 * When the candidate declares itself thread-safe (options.thread_safe), the
 * records flow through a oneTBB pipeline (select -> load -> candidate ->
 * analyze -> collect) with several records in flight; otherwise one record is
 * processed at a time on the calling thread. Both give the same results, in
 * the trace's record order.
 *
 * All tensors handed to the candidate are host memory (kDLCPU), whatever
 * device the recorded tensors lived on. Inputs have the layout they were
 * recorded with (peat_trace_tensor_info_t.strides: a transposed GEMM operand
 * arrives transposed, as the golden kernel saw it, because a kernel may
 * round differently on another layout of the same values); inputs recorded
 * compact, and every input of a format 1.0 trace, are compact row-major
 * (strides NULL). A strided input lives in a buffer of its layout's span;
 * its elements outside the view are zero. Outputs are always compact
 * row-major (strides NULL). A candidate may write to its inputs (an in-place
 * op); with run_twice the second run then sees what the first wrote.
 *
 * Thread safety: a playback is used by one thread at a time (run, then read
 * the results); several playbacks may run at once, also on the same reader.
 */
#ifndef PEAT_PLAYBACK_H
#define PEAT_PLAYBACK_H

#include <peat/analyzer.h>
#include <peat/core.h>
#include <peat/detector.h>
#include <peat/injector.h> /* peat_kernel_fn */
#include <peat/trace.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct peat_playback peat_playback_t;

/* What the candidate receives as its `attrs` argument. */
typedef int32_t peat_playback_attrs_mode_t;
enum peat_playback_attrs_mode_code {
  /* A const peat_playback_attrs_t* describing the record: its recorded
   * attributes, op, layer, step, call and run. For candidates written for
   * playback. */
  PEAT_PLAYBACK_ATTRS_LIST = 0,
  /* NULL (the default): for kernels whose attrs pointer has its own meaning
   * and may be NULL, e.g. the GEMM convention of
   * examples/candidates/peat_gemm_kernel.h (NULL = alpha 1, beta 0), which
   * would misread a peat_playback_attrs_t. */
  PEAT_PLAYBACK_ATTRS_NULL = 1
};

/* The recorded attributes of one op invocation, as the candidate receives them
 * in PEAT_PLAYBACK_ATTRS_LIST mode. Everything it points to is owned by the
 * playback (or its reader) and valid only during the candidate call. */
typedef struct peat_playback_attrs {
  uint32_t struct_size;     /* sizeof(peat_playback_attrs_t) */
  uint32_t reserved;        /* 0 */
  const peat_attr_t* attrs; /* n_attrs typed key-values (NULL when n_attrs == 0) */
  uint64_t n_attrs;
  const char* op;           /* op name */
  const char* module_path;  /* layer or module path ("" when none) */
  int64_t step;             /* training step of the record */
  uint64_t call_index;      /* per-op call index of the record */
  peat_phase_t phase;       /* phase of the record */
  int32_t run;              /* 0 for the first run, 1 for the second (run_twice) */
} peat_playback_attrs_t;

/* Progress callback: `done` records of `total` selected have been processed.
 * Called after each record, from one thread at a time (not necessarily the
 * caller's). Return 0 to go on, non-zero to cancel: peat_playback_run then
 * stops and returns PEAT_STATUS_CANCELLED, keeping the `done` results. */
typedef int32_t (*peat_playback_progress_fn)(void* user, uint64_t done, uint64_t total);

typedef struct peat_playback_options {
  uint32_t struct_size;        /* sizeof(peat_playback_options_t); set by options_init */
  int32_t thread_safe;         /* 1: the candidate may be called from several threads at
                                  once (on distinct outputs): records are pipelined on
                                  oneTBB. 0: serial, on the calling thread. Default 0. */
  int32_t run_twice;           /* 1: run the candidate twice per record and compare the
                                  runs (non-determinism). Default 0. */
  peat_playback_attrs_mode_t attrs_mode; /* Default PEAT_PLAYBACK_ATTRS_NULL. */
  const peat_trace_filter_t* filter; /* records to replay: op glob, step range, phase
                                  (peat_trace_filter_t; copied, with the glob, at create).
                                  Only op records are ever replayed, whatever filter->kinds
                                  says beyond the op bit. NULL (default) = every op record. */
  const peat_signature_config_t* config; /* analyzer settings for every comparison (copied
                                  at create); NULL (default) = peat_signature_config_init. */
  uint32_t max_in_flight;      /* pipelined mode: records in flight at once, 1..1024.
                                  Default 4. */
  int32_t num_threads;         /* pipelined mode: worker threads, 0 = oneTBB's default,
                                  >= 0. Default 0. */
  peat_playback_progress_fn progress; /* NULL (default) = none */
  void* progress_user;         /* passed to progress */
  /* ---- isolation (appended in 0.1; older callers' smaller struct_size keeps the defaults) ---- */
  int32_t isolate;             /* 1: run every candidate call in a forked worker process, so
                                  that a candidate that crashes, hangs or writes outside its
                                  outputs fails its record (status CALLBACK_FAILED, TIMEOUT or
                                  SHAPE_MISMATCH, with a message) and playback goes on with the
                                  next record. Each output then lives in shared memory, 64-byte
                                  aligned, followed and preceded by a PROT_NONE guard page;
                                  the bytes between the output and the guard pages are
                                  checked after the call, so a write even one byte past the
                                  end is caught. The worker is a fork of the caller: the
                                  candidate sees the same inputs and ctx, but what it changes
                                  outside its outputs (ctx, globals) is lost. Costs a fork
                                  per call (about 0.1-1 ms). POSIX only. Default 0. */
  uint32_t timeout_ms;         /* isolate: wall-clock limit of one candidate call in
                                  milliseconds; past it the worker is killed (SIGKILL) and the
                                  record fails with TIMEOUT. 0 = no limit. Default 10000. */
  /* ---- partition (appended in 0.2; older callers' smaller struct_size keeps the defaults) ---- */
  uint32_t partition_rank;     /* this playback replays share `partition_rank` (< partition_world)
                                  of the selected records. Default 0. */
  uint32_t partition_world;    /* number of shares, 1..65536. The selected records (in record
                                  order) are cut into partition_world contiguous shares of about
                                  equal decoded tensor bytes, read from the trace's footer index
                                  (peat_playback_partition_share gives the cut): the same trace,
                                  filter and world give the same shares on every machine, so MPI,
                                  torch.distributed or a batch array can each run one share, and
                                  peat_playback_export / peat_playback_import merge the shares'
                                  results into what one unpartitioned playback gives, byte for
                                  byte. Default 1 (every selected record). */
} peat_playback_options_t;

/* Fills *options with the defaults above and sets struct_size. NULL-safe. */
PEAT_API void peat_playback_options_init(peat_playback_options_t* options);

/* Creates a playback over `reader`, which must outlive it (borrowed).
 * `options` may be NULL (defaults). Errors: NULL reader/out ->
 * INVALID_ARGUMENT; bad struct_size (options, filter, config) ->
 * VERSION_MISMATCH; unknown attrs_mode, max_in_flight or num_threads out of
 * range, filter with unknown phase or kind bits, filter.kinds without the op
 * bit, bad config fields -> INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_playback_create(const peat_trace_reader_t* reader,
                                            const peat_playback_options_t* options,
                                            peat_playback_t** out_playback);

/* Frees a playback. NULL is a no-op. */
PEAT_API void peat_playback_destroy(peat_playback_t* playback);

/* Sets the candidate to `fn` (called with `ctx`), replacing any earlier one.
 * Errors: NULL playback/fn -> INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_playback_set_candidate(peat_playback_t* playback, peat_kernel_fn fn, void* ctx);

/* Sets the candidate to a kernel loaded from a shared object: `spec` is
 * "path/to/libx.so:symbol" (split at the last ':'), opened with
 * dlopen(RTLD_NOW | RTLD_LOCAL) by the same loader as
 * peat_injector_set_candidate_symbol and kept open until the playback is
 * destroyed or gets another candidate. Errors: NULL -> INVALID_ARGUMENT;
 * malformed spec -> INVALID_ARGUMENT; library that cannot be opened or symbol
 * not found -> NOT_FOUND with dlerror()'s text (the earlier candidate stays). */
PEAT_API peat_status_t peat_playback_set_candidate_symbol(peat_playback_t* playback, const char* spec,
                                                          void* ctx);

/* The candidate set by either function above, as the kernel and its ctx (a
 * loaded symbol stays loaded while the playback has it), so a caller that
 * also calls the candidate itself loads it once. Errors: NULL playback or
 * out_fn -> INVALID_ARGUMENT; no candidate yet -> BAD_STATE. */
PEAT_API peat_status_t peat_playback_candidate(const peat_playback_t* playback, peat_kernel_fn* out_fn,
                                               void** out_ctx);

/* Replays every selected record (clearing the results of an earlier run).
 * Failures of single records are not errors of the run: they are in the
 * results. Returns OK when every selected record was processed. Errors: NULL
 * -> INVALID_ARGUMENT; no candidate set -> BAD_STATE; the progress callback
 * asked to stop -> CANCELLED (the results of the records processed so far are
 * kept). */
PEAT_API peat_status_t peat_playback_run(peat_playback_t* playback);

/* Totals of the last run. */
typedef struct peat_playback_summary_s {
  uint32_t struct_size;      /* sizeof(peat_playback_summary_t), set by the caller */
  int32_t cancelled;         /* 1 when the last run was cancelled */
  uint64_t selected;         /* op records the filter selects */
  uint64_t done;             /* records processed (== selected unless cancelled) */
  uint64_t ok;               /* records compared (status OK) */
  uint64_t failed;           /* records with another status */
  uint64_t exact;            /* OK records whose outputs equal golden bit for bit */
  uint64_t mismatched;       /* OK records with at least one differing element */
  uint64_t nondeterministic; /* run_twice: OK records whose two runs differ in some bit */
} peat_playback_summary_t;

/* Fills *out (struct_size set by the caller). Zeros before any run. Errors:
 * NULL -> INVALID_ARGUMENT; struct_size too small -> VERSION_MISMATCH. */
PEAT_API peat_status_t peat_playback_summary(const peat_playback_t* playback, peat_playback_summary_t* out);

/* ---------------------------------------------------------- per record -- */

/* Number of results of the last run (== summary.done), in record order. */
PEAT_API peat_status_t peat_playback_result_count(const peat_playback_t* playback, uint64_t* out_count);

/* One replayed record. Strings are owned by the playback, never NULL, valid
 * until the next run or destroy. */
typedef struct peat_playback_result_s {
  uint32_t struct_size;   /* sizeof(peat_playback_result_t), set by the caller */
  peat_status_t status;   /* OK; CALLBACK_FAILED (the candidate returned non-zero);
                             SHAPE_MISMATCH (it changed an output's shape, dtype or data
                             pointer); CORRUPT_DATA / IO_ERROR / OUT_OF_MEMORY (the
                             record's tensors could not be read); UNSUPPORTED (an output
                             dtype the analyzer does not handle); with options.isolate
                             also CALLBACK_FAILED for a candidate that threw, crashed or
                             wrote outside its outputs, and TIMEOUT for one that did not
                             return within options.timeout_ms */
  uint64_t record;        /* record index in the trace */
  const char* op;         /* op name */
  const char* module_path;/* layer ("" when none) */
  int64_t step;
  uint64_t call_index;
  peat_phase_t phase;
  int32_t deterministic;  /* run_twice and OK: 1 when both runs are equal bit for bit,
                             0 when they differ; -1 otherwise */
  uint64_t n_outputs;     /* outputs of the record (signatures per output below) */
  uint64_t elements;      /* OK: elements compared over all outputs */
  uint64_t bitwise_mismatches; /* OK: elements differing from golden, over all outputs */
  uint64_t tolerance_failures; /* OK: elements failing the tolerance, over all outputs */
  const char* message;    /* "" when OK; else why, naming file, record and op */
} peat_playback_result_t;

/* Fills *out for result `index` (< result count). Errors: NULL ->
 * INVALID_ARGUMENT; index out of range -> NOT_FOUND; struct_size too small ->
 * VERSION_MISMATCH. */
PEAT_API peat_status_t peat_playback_result(const peat_playback_t* playback, uint64_t index,
                                            peat_playback_result_t* out);

/* Which comparison a signature describes. */
typedef int32_t peat_playback_compare_t;
enum peat_playback_compare_code {
  PEAT_PLAYBACK_FIRST_VS_GOLDEN = 0,  /* golden = recorded output, candidate = first run */
  PEAT_PLAYBACK_SECOND_VS_GOLDEN = 1, /* run_twice: golden = recorded, candidate = second run */
  PEAT_PLAYBACK_SECOND_VS_FIRST = 2   /* run_twice: golden = first run, candidate = second run */
};

/* The signature of output `output` (< n_outputs) of result `index` for
 * comparison `which`, into *out (struct_size set by the caller, e.g. by
 * peat_signature_init). Errors: NULL -> INVALID_ARGUMENT; index or output out
 * of range, a record that was not compared (status not OK), or a SECOND_*
 * comparison without run_twice -> NOT_FOUND; unknown `which` ->
 * INVALID_ARGUMENT; struct_size too small -> VERSION_MISMATCH. */
PEAT_API peat_status_t peat_playback_result_signature(const peat_playback_t* playback, uint64_t index,
                                                      uint64_t output, peat_playback_compare_t which,
                                                      peat_signature_t* out);

/* ----------------------------------------------------------- aggregates -- */

/* How records are grouped. */
typedef int32_t peat_playback_group_kind_t;
enum peat_playback_group_kind_code {
  PEAT_PLAYBACK_BY_OP = 0,   /* by op name */
  PEAT_PLAYBACK_BY_LAYER = 1 /* by module path ("" is a group too) */
};

/* Number of groups of `kind` (in order of first appearance in the trace). */
PEAT_API peat_status_t peat_playback_group_count(const peat_playback_t* playback, peat_playback_group_kind_t kind,
                                                 uint64_t* out_count);

/* One group. `name` owned by the playback, valid until the next run. */
typedef struct peat_playback_group_s {
  uint32_t struct_size;      /* sizeof(peat_playback_group_t), set by the caller */
  peat_playback_group_kind_t kind;
  const char* name;          /* op name or module path */
  uint64_t records;          /* results in the group */
  uint64_t ok;               /* of which compared */
  uint64_t failed;           /* of which not */
  uint64_t exact;            /* OK and equal to golden bit for bit */
  uint64_t nondeterministic; /* OK and the two runs differ */
  uint64_t n_outputs;        /* largest output count of its OK records */
} peat_playback_group_t;

/* Fills *out for group `index` of `kind`. Errors: NULL -> INVALID_ARGUMENT;
 * unknown kind -> INVALID_ARGUMENT; index out of range -> NOT_FOUND;
 * struct_size too small -> VERSION_MISMATCH. */
PEAT_API peat_status_t peat_playback_group(const peat_playback_t* playback, peat_playback_group_kind_t kind,
                                           uint64_t index, peat_playback_group_t* out);

/* The merged signature (peat_signature_merge of every OK record, through the
 * analyzer's aggregator) of output `output` of group `index`, comparison
 * `which`. The empty signature when no record contributed. A record whose
 * signature cannot merge with the group's earlier ones (another golden dtype
 * or tolerance for that output) is counted in the group but not merged.
 * Errors: as peat_playback_group; output >= n_outputs, or a SECOND_*
 * comparison without run_twice -> NOT_FOUND; unknown which ->
 * INVALID_ARGUMENT; struct_size too small -> VERSION_MISMATCH. */
PEAT_API peat_status_t peat_playback_group_signature(const peat_playback_t* playback,
                                                     peat_playback_group_kind_t kind, uint64_t index,
                                                     uint64_t output, peat_playback_compare_t which,
                                                     peat_signature_t* out);

/* ------------------------------------------------------------ verdicts -- */

/* Model slots of peat_playback_verdicts_t.counts (peat_error_model_t codes
 * 0..12 are used; the rest are room for models added later). */
#define PEAT_PLAYBACK_MODEL_SLOTS 16

/* The per-call verdicts of one output of a group. Playback judges every
 * compared call alone -- the Detector on that call's signature, with the
 * record's context (peat_playback_detect_context) and, with run_twice, its
 * second run -- because merged signatures misname per-call faults: one bit
 * flipped per call, in another element each time, merges into what looks
 * like a stuck bit or many flips. Merged signatures stay for what they are
 * good at (stable statistics); this says "BITFLIP_SINGLE in 40 of 40 calls,
 * bits {22, 29}". */
typedef struct peat_playback_verdicts_s {
  uint32_t struct_size;        /* sizeof(peat_playback_verdicts_t), set by the caller */
  peat_error_model_t top_model;/* the model to report first: the most frequent top verdict
                                  other than EXACT, ROUNDING and REDUCED_PRECISION (an anomaly
                                  is never hidden by its floor), else the most frequent of
                                  those; -1 when no call was judged */
  uint64_t records;            /* compared records of the group that have this output */
  uint64_t judged;             /* of which the Detector judged (an empty output is not) */
  uint64_t counts[PEAT_PLAYBACK_MODEL_SLOTS]; /* judged calls per top-verdict model, indexed
                                  by peat_error_model_t code */
  uint64_t bits;               /* bit b (0 = least significant storage bit) is set when some
                                  call's top verdict (BITFLIP_*, STUCK_AT) named bit b */
} peat_playback_verdicts_t;

/* Fills *out for output `output` of group `index` of `kind` after a run.
 * Errors: NULL -> INVALID_ARGUMENT; unknown kind -> INVALID_ARGUMENT; index
 * or output out of range -> NOT_FOUND; struct_size too small ->
 * VERSION_MISMATCH. */
PEAT_API peat_status_t peat_playback_group_verdicts(const peat_playback_t* playback, peat_playback_group_kind_t kind,
                                                    uint64_t index, uint64_t output,
                                                    peat_playback_verdicts_t* out);

/* The Detector's full detection of output `output` of result `index` alone
 * (the call whose top verdict peat_playback_group_verdicts counted), into
 * *out (struct_size set by the caller, peat_detection_init). Errors: NULL ->
 * INVALID_ARGUMENT; index or output out of range, or a record that was not
 * compared -> NOT_FOUND; the Detector's own errors (peat_detect); struct_size
 * too small -> VERSION_MISMATCH. */
PEAT_API peat_status_t peat_playback_result_detection(const peat_playback_t* playback, uint64_t index,
                                                      uint64_t output, peat_detection_t* out);

/* The Detector's context of output `output` of op record `record` of a
 * trace: context->op_kind and context->reduction_length from the record's op
 * name, input shapes and attributes (peat_detect_context_infer's rule, with
 * `signature_k` as there); the other fields are left as they are. The CLI,
 * Python and peat.torch judge every recorded call with it. Errors: NULL
 * reader or context -> INVALID_ARGUMENT; bad index -> NOT_FOUND; not an op
 * record -> INVALID_ARGUMENT; bad struct_size -> VERSION_MISMATCH. */
PEAT_API peat_status_t peat_playback_detect_context(const peat_trace_reader_t* reader, uint64_t record,
                                                    uint64_t output, int64_t signature_k,
                                                    peat_detect_context_t* context);

/* ------------------------------------------------------- partitions -- */

/* Share `rank` (< options.partition_world) of the playback's selected records:
 * the share holds the selected records whose index is in
 * [*out_first_record, *out_end_record) (both 0 when it is empty), *out_records
 * of them. Any output pointer may be NULL. Needs no run. Errors: NULL
 * playback -> INVALID_ARGUMENT; rank >= partition_world -> NOT_FOUND. */
PEAT_API peat_status_t peat_playback_partition_share(const peat_playback_t* playback, uint32_t rank,
                                                     uint64_t* out_first_record, uint64_t* out_end_record,
                                                     uint64_t* out_records);

/* Serialises the results of the last run (every record's status, counts,
 * signatures and per-call verdicts, plus this playback's share and summary)
 * into `buffer`, for peat_playback_import on another process: a host-endian
 * byte string, meant for processes of one build on one architecture (MPI
 * ranks, batch jobs). *out_size receives the bytes needed; with buffer NULL
 * and capacity 0 only the size is returned. Errors: NULL playback or
 * out_size, NULL buffer with capacity > 0 -> INVALID_ARGUMENT; capacity below
 * the size -> BUFFER_TOO_SMALL (nothing written, *out_size set); no run yet
 * -> BAD_STATE. */
PEAT_API peat_status_t peat_playback_export(const peat_playback_t* playback, void* buffer, size_t capacity,
                                            size_t* out_size);

/* Merges the results another share exported (peat_playback_export of a
 * playback over the same trace, with the same filter, config, run_twice and
 * partition_world, and another partition_rank) into this playback, which
 * must have run: the results join in record order, the summary counts add,
 * and the per-op and per-layer groups are formed again from every record in
 * record order (peat_signature_merge of exact signatures, so the result is
 * byte for byte that of one unpartitioned run once every share is in).
 * `data` is untrusted: every size is checked. Errors: NULL -> INVALID_ARGUMENT;
 * not an export, truncated, or a record outside the exporter's share ->
 * CORRUPT_DATA; another build's signature layout -> VERSION_MISMATCH;
 * another trace (record count), options or world, or a share already merged
 * -> INVALID_ARGUMENT; no run yet -> BAD_STATE. On error the playback is
 * unchanged. */
PEAT_API peat_status_t peat_playback_import(peat_playback_t* playback, const void* data, size_t size);

/* Writes the results as JSON lines to `path`: one object per record
 * ("type":"record": record, op, layer, phase, step, call, status, message,
 * deterministic, and per output its recorded name, elements, bitwise_mismatches,
 * tolerance_failures, new_nonfinite, max_abs_error, max_rel_error, and with
 * run_twice repeat_mismatches), then one per group ("type":"op" or "layer",
 * with the counts above and the merged per-output figures). `append` 1 appends
 * to an existing file, 0 truncates. Errors: NULL -> INVALID_ARGUMENT; the file
 * cannot be written -> IO_ERROR (NOT_FOUND for a missing directory). */
PEAT_API peat_status_t peat_playback_write_jsonl(const peat_playback_t* playback, const char* path,
                                                 int32_t append);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PEAT_PLAYBACK_H */
