/*
 * peat/trace.h — reading PEAT trace files (the Profiler's output, Playback's
 * input).
 *
 * A trace is one file per rank, append-only (docs/trace-format.md gives the
 * bytes): a header with the run metadata, framed records (op invocations,
 * checkpoints, scalars, step markers) whose metadata is FlatBuffers and whose
 * tensor payloads are encoded with a codec and carry an XXH3 checksum, and a
 * footer index written when the writer closes the file. Traces are written by
 * the profiler (peat/profiler.h).
 *
 * Traces are untrusted input. Opening a trace checks the header, the footer,
 * every record frame (magic, bounds, checksum), verifies every FlatBuffer and
 * checks every tensor description (dtype, shape, sizes, payload bounds);
 * loading a tensor checks its decoded size and checksum. A malformed file
 * gives PEAT_STATUS_CORRUPT_DATA (or VERSION_MISMATCH for a newer format)
 * with a message naming the file, the record number and the byte offset;
 * never a crash and never an allocation larger than the file, the tensor's
 * declared size or the caller's limit.
 *
 * Thread safety: a reader is immutable after it is opened; every function
 * below may be called on the same reader from several threads at once.
 * Pointers returned by a reader (strings, shapes, attribute arrays) are owned
 * by the reader and stay valid until peat_trace_close.
 */
#ifndef PEAT_TRACE_H
#define PEAT_TRACE_H

#include <peat/core.h>
#include <peat/session.h> /* peat_phase_t */

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the trace format this library writes. A reader accepts files
 * with the same major version (any minor); another major -> VERSION_MISMATCH.
 * 1.1 adds tensor strides and storage offsets, and record sequence numbers;
 * 1.2 tensor references; 1.3 XOR-delta tensors (docs/trace-format.md). */
#define PEAT_TRACE_FORMAT_MAJOR 1
#define PEAT_TRACE_FORMAT_MINOR 3

typedef struct peat_trace_reader peat_trace_reader_t;

/* Kind of a record. */
typedef int32_t peat_trace_kind_t;
enum peat_trace_kind_code {
  PEAT_TRACE_KIND_OP = 1,         /* an op invocation: attributes, inputs, outputs */
  PEAT_TRACE_KIND_CHECKPOINT = 2, /* a named tensor set at a step */
  PEAT_TRACE_KIND_SCALAR = 3,     /* one named scalar (loss, accuracy, lr) at a step */
  PEAT_TRACE_KIND_STEP = 4        /* a step marker */
};

/* Payload codec of a tensor. */
typedef int32_t peat_trace_codec_t;
enum peat_trace_codec_code {
  PEAT_TRACE_CODEC_RAW = 0,          /* bytes as they are */
  PEAT_TRACE_CODEC_SHUFFLE_ZSTD = 1, /* byte-shuffle by element size, then zstd */
  /* format 1.3: byte-shuffle + zstd of the tensor's bytes XORed with those of an
     earlier version of it (its base, docs/trace-format.md "Delta tensors"). The
     profiler chooses it per tensor when the codec is SHUFFLE_ZSTD; it is not an
     option value. Loading decodes the base first. */
  PEAT_TRACE_CODEC_XOR_DELTA_SHUFFLE_ZSTD = 2
};

/* Which tensor list of a record a tensor index refers to. */
typedef int32_t peat_trace_slot_t;
enum peat_trace_slot_code {
  PEAT_TRACE_SLOT_INPUT = 0,     /* an op invocation's inputs */
  PEAT_TRACE_SLOT_OUTPUT = 1,    /* an op invocation's outputs */
  PEAT_TRACE_SLOT_CHECKPOINT = 2 /* a checkpoint's tensors */
};

/* Type of an op attribute. */
typedef int32_t peat_attr_type_t;
enum peat_attr_type_code {
  PEAT_ATTR_INT = 0,      /* int64 value in `i` */
  PEAT_ATTR_FLOAT = 1,    /* double value in `f` */
  PEAT_ATTR_STRING = 2,   /* NUL-terminated string in `s` */
  PEAT_ATTR_INT_ARRAY = 3 /* `n_ints` int64 values at `ints` */
};

/* A typed key-value attribute of an op invocation (e.g. "transpose_a" = 1,
 * "stride" = [2, 2]). Used both to record (peat/profiler.h; the library
 * copies what the pointers show) and to read (pointers owned by the reader).
 * Only the member named by `type` is meaningful. */
typedef struct peat_attr {
  const char* key;      /* attribute name, non-empty */
  peat_attr_type_t type;
  int32_t reserved;     /* 0 */
  int64_t i;            /* PEAT_ATTR_INT */
  double f;             /* PEAT_ATTR_FLOAT */
  const char* s;        /* PEAT_ATTR_STRING */
  const int64_t* ints;  /* PEAT_ATTR_INT_ARRAY: n_ints values (may be NULL when n_ints == 0) */
  uint64_t n_ints;
} peat_attr_t;

/* ------------------------------------------------------------- opening -- */

typedef struct peat_trace_reader_options {
  uint32_t struct_size;      /* sizeof(peat_trace_reader_options_t); set by options_init */
  uint32_t reserved;         /* 0 */
  uint64_t max_tensor_bytes; /* largest decoded tensor peat_trace_load_tensor_alloc
                                will allocate, in bytes; larger -> OUT_OF_MEMORY.
                                Default 4 GiB. */
  uint64_t max_meta_bytes;   /* largest FlatBuffer metadata of one record accepted,
                                in bytes (1 KiB .. 2 GiB). Default 64 MiB, the
                                most the profiler writes. A record above it is
                                skipped (peat_trace_skipped); the records after
                                it are read. */
  uint64_t max_record_bytes; /* per-record memory cap, in bytes: the most decoded
                                tensor bytes one record may hold for
                                peat_trace_load_tensor_alloc and playback, which
                                fail that record with OUT_OF_MEMORY and go on to
                                the next. peat_trace_verify decodes in bounded
                                chunks and is not capped. Default an eighth of
                                the physical memory (at least 256 MiB); 0 = the
                                default. (Appended in 0.2.) */
} peat_trace_reader_options_t;

/* Fills *options with the defaults above and sets struct_size. NULL-safe. */
PEAT_API void peat_trace_reader_options_init(peat_trace_reader_options_t* options);

/* Opens a complete trace (one whose writer closed it, so it ends with a footer
 * index) and checks all of it but the tensor payloads (see the top of this
 * file). `options` may be NULL (defaults).
 * Errors: NULL path/out, or a path that is not a regular file (a FIFO is
 * refused without blocking) -> INVALID_ARGUMENT; file missing -> NOT_FOUND; read
 * failure -> IO_ERROR; malformed file or no footer (the writer was killed:
 * use peat_trace_recover) -> CORRUPT_DATA; other format major ->
 * VERSION_MISMATCH; bad struct_size -> VERSION_MISMATCH. */
PEAT_API peat_status_t peat_trace_open(const char* path, const peat_trace_reader_options_t* options,
                                       peat_trace_reader_t** out_reader);

/* What peat_trace_recover found. */
typedef struct peat_trace_recovery {
  uint32_t struct_size;  /* sizeof(peat_trace_recovery_t), set by the caller */
  int32_t complete;      /* 1 when the file has a valid footer index (closed cleanly) */
  uint64_t records;      /* complete, intact records readable (excluding the index) */
  uint64_t valid_bytes;  /* bytes from the start of the file to the end of the last
                            intact record (the header when there is none); the
                            whole file when it is complete */
  uint64_t file_bytes;   /* size of the file */
  char stop_reason[256]; /* why the scan stopped, e.g. "record 12 at byte 40960: checksum
                            mismatch"; "" for a complete file. NUL-terminated, truncated. */
} peat_trace_recovery_t;

/* Opens a trace whose writer may have been killed: reads the header, then
 * every record in order until the first incomplete or damaged one (or the
 * footer), and gives a reader over the intact records. The file is not
 * modified. *out_recovery (may be NULL; its struct_size must be set) receives
 * the counts. The header must be intact.
 * Errors: as peat_trace_open, except that a missing footer or a damaged tail
 * is not an error. */
PEAT_API peat_status_t peat_trace_recover(const char* path, const peat_trace_reader_options_t* options,
                                          peat_trace_reader_t** out_reader,
                                          peat_trace_recovery_t* out_recovery);

/* Records of the file the reader does not list: with peat_trace_open those
 * whose metadata is above options.max_meta_bytes; with peat_trace_recover also
 * those whose frame is intact but whose content fails the checks or is out of
 * sequence. *out_count (non-NULL) receives how many; *out_first (may be NULL)
 * a message naming the first one's record number and byte offset ("" when
 * none), owned by the reader. (0.2) */
PEAT_API peat_status_t peat_trace_skipped(const peat_trace_reader_t* reader, uint64_t* out_count,
                                          const char** out_first);

/* Writes a new, complete trace at `out_path` holding the header and every
 * intact record of `reader` byte for byte (so every field, value and unix_ns
 * is kept as recorded), checking every tensor payload in bounded memory first:
 * a record with a damaged payload is left out and the records after it are
 * kept. Sequence numbers are kept (a gap marks each record left out).
 * *out_written / *out_dropped (may be NULL) receive the counts. Errors:
 * out_path unwritable or not a regular file -> IO_ERROR / INVALID_ARGUMENT.
 * (0.2) */
PEAT_API peat_status_t peat_trace_copy_intact(const peat_trace_reader_t* reader, const char* out_path,
                                              uint64_t* out_written, uint64_t* out_dropped);

/* Closes a reader and frees everything it owns. NULL is a no-op. Not
 * thread-safe with other calls on the same reader. */
PEAT_API void peat_trace_close(peat_trace_reader_t* reader);

/* ------------------------------------------------------- run metadata -- */

/* The run metadata of the header. Strings are owned by the reader, never NULL
 * ("" when absent). */
typedef struct peat_trace_run_info_s {
  uint32_t struct_size;        /* sizeof(peat_trace_run_info_t), set by the caller */
  uint16_t format_major;       /* format version of the file */
  uint16_t format_minor;
  const char* framework;       /* e.g. "pytorch 2.3", "c++ trainer" */
  const char* device;          /* e.g. "NVIDIA H100 80GB HBM3", "host" */
  const char* vendor;          /* e.g. "NVIDIA", "AMD", "host" */
  const char* library_version; /* PEAT version that wrote the file, e.g. "0.1.0" */
  const char* run_name;        /* the session's run name */
  int32_t rank;                /* rank of the process that wrote the file */
  int32_t world_size;          /* number of ranks */
  uint64_t created_unix_ns;    /* creation time, ns since the Unix epoch (UTC) */
  uint64_t n_tags;             /* free-form tags; read with peat_trace_tag */
} peat_trace_run_info_t;

/* Fills *out (whose struct_size the caller set). Errors: NULL arguments ->
 * INVALID_ARGUMENT; struct_size too small -> VERSION_MISMATCH. */
PEAT_API peat_status_t peat_trace_run_info(const peat_trace_reader_t* reader, peat_trace_run_info_t* out);

/* Tag `index` (< n_tags) of the header as key and value (owned by the reader).
 * Errors: index out of range -> NOT_FOUND. */
PEAT_API peat_status_t peat_trace_tag(const peat_trace_reader_t* reader, uint64_t index,
                                      const char** out_key, const char** out_value);

/* -------------------------------------------------------------- records -- */

/* Number of records (excluding the footer index). */
PEAT_API peat_status_t peat_trace_record_count(const peat_trace_reader_t* reader, uint64_t* out_count);

/* Summary of one record. Strings are owned by the reader, never NULL. Fields
 * that do not apply to the record's kind are 0 or "". */
typedef struct peat_trace_record_info_s {
  uint32_t struct_size;     /* sizeof(peat_trace_record_info_t), set by the caller */
  peat_trace_kind_t kind;
  uint64_t file_offset;     /* byte offset of the record's frame in the file */
  uint64_t file_bytes;      /* bytes the record occupies in the file */
  int64_t step;             /* training step (every kind) */
  const char* name;         /* OP: op name; CHECKPOINT: checkpoint name; SCALAR: scalar name */
  peat_phase_t phase;       /* OP: phase (peat/session.h) */
  int32_t reserved;
  const char* module_path;  /* OP: layer or module path, e.g. "encoder.layer3.attn" */
  uint64_t call_index;      /* OP: per-op call index */
  uint64_t n_attrs;         /* OP: number of attributes */
  uint64_t n_inputs;        /* OP: number of input tensors */
  uint64_t n_outputs;       /* OP: number of output tensors */
  uint64_t n_tensors;       /* CHECKPOINT: number of tensors */
  double value;             /* SCALAR: the value */
  uint64_t unix_ns;         /* STEP: wall time of the marker, ns since the epoch */
} peat_trace_record_info_t;

/* Fills *out for record `index` (< record count). Errors: index out of range
 * -> NOT_FOUND; NULL -> INVALID_ARGUMENT; struct_size too small ->
 * VERSION_MISMATCH. */
PEAT_API peat_status_t peat_trace_record_info(const peat_trace_reader_t* reader, uint64_t index,
                                              peat_trace_record_info_t* out);

/* Attribute `attr` (< n_attrs) of op record `index`; pointers owned by the
 * reader. Errors: record not an op -> INVALID_ARGUMENT; out of range ->
 * NOT_FOUND. */
PEAT_API peat_status_t peat_trace_attr(const peat_trace_reader_t* reader, uint64_t index, uint64_t attr,
                                       peat_attr_t* out);

/* Which records peat_trace_next selects. */
typedef struct peat_trace_filter {
  uint32_t struct_size; /* sizeof(peat_trace_filter_t); set by options_init */
  uint32_t kinds;       /* bit mask of (1u << kind); 0 = every kind. Default 0. */
  const char* op_glob;  /* shell glob ('*', '?', '[...]') the record's name must
                           match (op, checkpoint or scalar name; step markers
                           have none and never match a glob); NULL = any. Default NULL. */
  int64_t step_min;     /* inclusive step range. Default INT64_MIN .. INT64_MAX. */
  int64_t step_max;
  int32_t phase;        /* only op records of this phase; -1 = any. Default -1. */
  int32_t reserved;
} peat_trace_filter_t;

/* Fills *filter with the defaults above (select everything). NULL-safe. */
PEAT_API void peat_trace_filter_init(peat_trace_filter_t* filter);

/* The first record with index >= start that `filter` selects (NULL = all), in
 * *out_index. Iterate with
 *   for (uint64_t i = 0; peat_trace_next(r, &f, i, &i) == PEAT_STATUS_OK; ++i) ...
 * Errors: none left -> NOT_FOUND (no message is set for this normal end);
 * bad filter (struct_size, unknown phase or kind bits) -> VERSION_MISMATCH /
 * INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_trace_next(const peat_trace_reader_t* reader, const peat_trace_filter_t* filter,
                                       uint64_t start, uint64_t* out_index);

/* -------------------------------------------------------------- tensors -- */

/* Description of a recorded tensor. Pointers owned by the reader. */
typedef struct peat_trace_tensor_info_s {
  uint32_t struct_size;      /* sizeof(peat_trace_tensor_info_t), set by the caller */
  int32_t ndim;              /* 0..32 */
  const char* name;          /* tensor name ("" when none was given) */
  DLDataType dtype;
  DLDevice device;           /* where the recorded tensor lived */
  const int64_t* shape;      /* ndim extents (NULL when ndim == 0) */
  int64_t numel;             /* product of the extents */
  uint64_t raw_bytes;        /* decoded size: numel * element size (compact row-major) */
  uint64_t encoded_bytes;    /* size in the file */
  peat_trace_codec_t codec;
  int32_t reserved;
  uint64_t checksum;         /* XXH3-64 of the decoded bytes */
  /* ---- appended in format 1.1 / library 0.2; a caller whose struct_size ends
   * before these fields gets the fields it knows ---- */
  const int64_t* strides;    /* ndim element strides of the tensor's logical layout as it was
                                recorded (DLPack convention, any signs, 0 for broadcast
                                dimensions); NULL when it was compact row-major (and for
                                every tensor of a format 1.0 trace). The decoded payload is
                                compact row-major either way; playback rebuilds this layout
                                for the candidate's inputs. Owned by the reader. */
  int64_t storage_offset;    /* elements from the start of its storage, as the recording
                                caller gave it (DLTensor byte_offset / element size); 0 when
                                not recorded */
  /* ---- appended in format 1.2 / library 0.2 ---- */
  int32_t is_reference;      /* 1: the tensor's bytes are stored once, in the tensor named by
                                ref_seq / ref_slot / ref_tensor (docs/trace-format.md,
                                "Tensor references"); encoded_bytes is 0 and checksum is the
                                stored tensor's (0 when the reference cannot be followed).
                                Loading follows the reference. 0: stored in this record. */
  peat_trace_slot_t ref_slot;  /* slot of the stored tensor (when is_reference) */
  uint64_t ref_seq;          /* sequence number of the record holding it (when is_reference) */
  uint64_t ref_tensor;       /* its index in ref_slot (when is_reference) */
} peat_trace_tensor_info_t;

/* Number of tensors in `slot` of record `index`. Errors: slot does not apply
 * to the record's kind or is unknown -> INVALID_ARGUMENT; bad index -> NOT_FOUND. */
PEAT_API peat_status_t peat_trace_tensor_count(const peat_trace_reader_t* reader, uint64_t index,
                                               peat_trace_slot_t slot, uint64_t* out_count);

/* Describes tensor `tensor` of `slot` of record `index`. out->struct_size may
 * be that of any released version of the struct (from the size ending at
 * `checksum` up to sizeof): the library writes the fields inside it.
 * Errors as peat_trace_tensor_count, tensor out of range -> NOT_FOUND, and
 * struct_size below the first version's -> VERSION_MISMATCH. */
PEAT_API peat_status_t peat_trace_tensor_info(const peat_trace_reader_t* reader, uint64_t index,
                                              peat_trace_slot_t slot, uint64_t tensor,
                                              peat_trace_tensor_info_t* out);

/* Decodes a tensor into the caller's buffer `dst` of `capacity` bytes (compact
 * row-major, raw_bytes long) and checks its checksum. Errors: capacity <
 * raw_bytes -> BUFFER_TOO_SMALL (nothing written); read failure -> IO_ERROR;
 * undecodable data or checksum mismatch -> CORRUPT_DATA (dst may then hold
 * partial data). */
PEAT_API peat_status_t peat_trace_load_tensor(const peat_trace_reader_t* reader, uint64_t index,
                                              peat_trace_slot_t slot, uint64_t tensor, void* dst,
                                              size_t capacity);

/* Decodes a tensor into memory the library allocates (host memory, compact
 * row-major, device kDLCPU) and returns it as a DLPack managed tensor. Free it
 * with peat_trace_tensor_free (or its own deleter). Errors: raw_bytes larger
 * than options.max_tensor_bytes -> OUT_OF_MEMORY; else as
 * peat_trace_load_tensor. */
PEAT_API peat_status_t peat_trace_load_tensor_alloc(const peat_trace_reader_t* reader, uint64_t index,
                                                    peat_trace_slot_t slot, uint64_t tensor,
                                                    DLManagedTensor** out_tensor);

/* Frees a tensor from peat_trace_load_tensor_alloc (calls its deleter). NULL is
 * a no-op. */
PEAT_API void peat_trace_tensor_free(DLManagedTensor* tensor);

/* Decodes every tensor of every record and checks its checksum: a full check
 * of the file's payloads, in bounded memory (large tensors are decoded in
 * chunks of a few MiB). *out_tensors (may be NULL) receives the number of
 * tensors checked. Errors: the first damaged tensor -> CORRUPT_DATA naming
 * file, record, tensor and byte offset. */
PEAT_API peat_status_t peat_trace_verify(const peat_trace_reader_t* reader, uint64_t* out_tensors);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PEAT_TRACE_H */
