/*
 * peat/detector.h — the Detector: names the error model behind an error
 * signature (DESIGN.md §6) through documented sufficient conditions, and
 * returns ranked verdicts with parameters and the evidence that fired.
 *
 * Input: a peat_signature_t (analyzer.h) of (golden, candidate), optionally
 * its spatial map, and a context (op kind, reduction length K, dtypes, an
 * optional second candidate run's signature, an optional float64-reference
 * signature). Output: a peat_detection_t holding up to
 * PEAT_DETECT_MAX_VERDICTS verdicts, most specific first. The verdict model
 * codes are the injector's peat_error_model_t (injector.h): the injector
 * labels what it produces, the Detector what it recognises.
 *
 * Every rule, its threshold and where the threshold comes from are listed in
 * docs/error-models.md. The Detector is a pure function of its inputs: no
 * state, no allocation visible to the caller, thread-safe.
 */
#ifndef PEAT_DETECTOR_H
#define PEAT_DETECTOR_H

#include <peat/analyzer.h>
#include <peat/core.h>
#include <peat/trace.h> /* peat_attr_t */

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ constants -- */

/* Most verdicts one detection holds. */
#define PEAT_DETECT_MAX_VERDICTS 8
/* Evidence lines per verdict, and the bytes of each (NUL included). */
#define PEAT_DETECT_EVIDENCE_LINES 4
#define PEAT_DETECT_EVIDENCE_CHARS 192
/* Version of the JSON rendering's layout ("schema_version" field). */
#define PEAT_DETECT_JSON_SCHEMA_VERSION 1

/* The kind of operation that produced the output; it decides which rounding
 * bound applies. */
typedef int32_t peat_op_kind_t;
enum peat_op_kind_code {
  PEAT_OP_KIND_UNKNOWN = 0,     /* rounding allowance of a few ULP, no K bound */
  PEAT_OP_KIND_GEMM = 1,        /* dot products of length K (needs K >= 1) */
  PEAT_OP_KIND_CONV = 2,        /* convolution, K = C*R*S (needs K >= 1) */
  PEAT_OP_KIND_REDUCTION = 3,   /* a sum of K terms (needs K >= 1) */
  PEAT_OP_KIND_ELEMENTWISE = 4  /* per-element arithmetic: a few ULP */
};

/* Output formats of peat_detection_render. */
typedef int32_t peat_render_format_t;
enum peat_render_format_code {
  PEAT_RENDER_TEXT = 0, /* an aligned table for terminals */
  PEAT_RENDER_JSON = 1, /* one JSON object with "schema_version" */
  PEAT_RENDER_CSV = 2   /* a header line, then one line per verdict */
};

/* ------------------------------------------------------------- context -- */

/* What the Detector knows besides the signature. Fill with
 * peat_detect_context_init, then set what you know. All pointers are
 * borrowed for the call only. */
typedef struct peat_detect_context {
  uint32_t struct_size;        /* sizeof(peat_detect_context_t); set by context_init */
  peat_op_kind_t op_kind;      /* default PEAT_OP_KIND_UNKNOWN */
  int64_t reduction_length;    /* K; 0 (default) = the signature's reduction_length. GEMM, CONV
                                  and REDUCTION need K >= 1 from one of the two; >= 0 */
  DLDataType golden_dtype;     /* bits 0 (default) = the signature's golden_dtype; otherwise it
                                  must equal it */
  DLDataType candidate_dtype;  /* bits 0 (default) = the signature's candidate_dtype; reported
                                  in evidence only */
  double unit_roundoff;        /* u of the op's arithmetic; 0 (default) = the signature's
                                  unit_roundoff (or the golden dtype's); >= 0 */
  double rounding_slack;       /* the multiple of a rounding bound still accepted as ROUNDING
                                  (of sqrt(2K)*u for reductions, and of the golden's own
                                  error when `reference` is given); > 0, default 4 */
  const peat_spatial_map_t* map;      /* the signature's spatial map, or NULL (REGION and lane
                                         periods need it). Its mismatch_count must not exceed
                                         the signature's count */
  const peat_signature_t* rerun;      /* signature of (golden, a second candidate run on the same
                                         input), or NULL; any difference from `signature`
                                         gives NONDETERMINISM */
  const peat_signature_t* reference;  /* signature of (float64 reference, golden), or NULL: the
                                         golden's own error. A candidate error within
                                         rounding_slack times it counts as ROUNDING */
  /* ---- appended in 0.2 ---- */
  const peat_signature_t* rerun_diff; /* signature of (candidate run 1, candidate run 2) on the same
                                         input, or NULL: the runs compared elementwise. Any bitwise
                                         mismatch gives NONDETERMINISM (two runs whose results swap
                                         between equal-looking elements have equal signatures against
                                         the golden, yet differ here). Its count must equal the
                                         signature's */
} peat_detect_context_t;

/* ------------------------------------------------------------- verdicts -- */

/* One verdict. Arrays of it cross the ABI inside peat_detection_t, so this
 * struct is frozen. Parameters that do not apply hold -1 (integers) or 0
 * (alpha, mantissa bits, confidence never). */
typedef struct peat_verdict {
  peat_error_model_t model;      /* the model (injector.h codes) */
  int32_t evidence_count;        /* lines used in evidence[] */
  double confidence;             /* in [0, 1]: how decisively the sufficient condition held */
  int32_t bit;                   /* BITFLIP / STUCK_AT: the bit (0 = least significant storage
                                    bit), -1 if several or unknown */
  int32_t polarity;              /* STUCK_AT: the stuck value 0/1; BITFLIP: the flipped bit's new
                                    value when all flips agree; -1 otherwise */
  int32_t lane_period;           /* STUCK_AT / REGION: 32 or 64 when confined to one lane, else -1 */
  int32_t lane;                  /* that lane, or -1 */
  double effective_mantissa_bits;/* ROUNDING / REDUCED_PRECISION: the candidate's effective
                                    mantissa bits (docs/error-models.md), else 0 */
  peat_float_format_t nearest_format; /* REDUCED_PRECISION: nearest narrow format (injector.h
                                    PEAT_FORMAT_*; 10 bits read FP16 when max |g| fits fp16's
                                    range, TF32 otherwise), else -1 */
  int32_t reserved;              /* 0 */
  double alpha;                  /* SCALING: the scale factor (mean of c/g), else 0 */
  int64_t rows_affected;         /* rows with a mismatch (needs the map), else -1 */
  int64_t cols_affected;         /* columns with a mismatch (needs the map), else -1 */
  int64_t tiles_affected;        /* tiles with a mismatch (needs the map), else -1 */
  int64_t elements;              /* elements this verdict accounts for */
  int64_t first_index;           /* first mismatching element (map, or the max-error index), -1 */
  char evidence[PEAT_DETECT_EVIDENCE_LINES][PEAT_DETECT_EVIDENCE_CHARS]; /* NUL-terminated lines:
                                    the condition that held, with the measured values */
} peat_verdict_t;

/* The result of one detection. Caller sets struct_size (peat_detection_init). */
typedef struct peat_detection {
  uint32_t struct_size;          /* sizeof(peat_detection_t) */
  int32_t verdict_count;         /* verdicts used, 1..PEAT_DETECT_MAX_VERDICTS after success */
  uint64_t elements;             /* pairs in the signature */
  uint64_t mismatches;           /* value mismatches in the signature */
  peat_verdict_t verdicts[PEAT_DETECT_MAX_VERDICTS]; /* ranked: the most specific model first */
} peat_detection_t;

/* Fills *context with the defaults above and sets struct_size. NULL-safe. */
PEAT_API void peat_detect_context_init(peat_detect_context_t* context);

/* Zeroes *detection and sets struct_size. NULL-safe. */
PEAT_API void peat_detection_init(peat_detection_t* detection);

/* Names the error models behind `signature`. `context` may be NULL (all
 * defaults). On success *out holds 1..PEAT_DETECT_MAX_VERDICTS verdicts,
 * ranked: NONDETERMINISM first when the rerun differs, then the model that
 * explains the largest errors (a bit flip before the rounding noise it sits
 * on), then secondary models (NONFINITE produced by a flip, ROUNDING noise
 * beneath), UNKNOWN when no sufficient condition holds.
 * Errors: NULL signature or out -> INVALID_ARGUMENT; struct_size of the
 * signature, context, map, rerun, reference or out wrong -> VERSION_MISMATCH;
 * an empty signature (count 0) or inconsistent counts (more mismatches than
 * pairs, histograms that do not add up to count, a map with more mismatches
 * than pairs) -> INVALID_ARGUMENT naming the field; unknown op_kind ->
 * INVALID_ARGUMENT; GEMM/CONV/REDUCTION with K = 0 -> INVALID_ARGUMENT;
 * golden dtype other than f16/bf16/f32/f64, or a context dtype that differs
 * from the signature's -> UNSUPPORTED resp. INVALID_ARGUMENT; a rerun of
 * another golden dtype, or a rerun or reference of another element count ->
 * INVALID_ARGUMENT; context.unit_roundoff outside [0, 1), rounding_slack <= 0,
 * reduction_length < 0 -> INVALID_ARGUMENT.
 * On error *out is left with verdict_count 0. Thread-safe. */
PEAT_API peat_status_t peat_detect(const peat_signature_t* signature, const peat_detect_context_t* context,
                                   peat_detection_t* out);

/* Renders a detection as text, JSON or CSV into `buffer` (NUL-terminated).
 * *out_length (may be NULL) receives the length without the NUL; when
 * `capacity` is too small (buffer may then be NULL), nothing is written, the
 * needed length is still reported, and the call returns BUFFER_TOO_SMALL.
 * Errors: NULL detection -> INVALID_ARGUMENT; verdict_count outside
 * 0..PEAT_DETECT_MAX_VERDICTS or bad struct_size -> INVALID_ARGUMENT /
 * VERSION_MISMATCH; unknown format -> INVALID_ARGUMENT. Thread-safe. */
PEAT_API peat_status_t peat_detection_render(const peat_detection_t* detection, peat_render_format_t format,
                                             char* buffer, size_t capacity, size_t* out_length);

/* ---------------------------------------------------------- op context -- */

/* The family of an op name, as every stack names it: lower case, namespace
 * prefixes ("aten::", "torch.", "nn.functional.") and overload or version
 * suffixes (".default", "_v2") and vendor prefixes (cublas, hipblas,
 * rocblas, cudnn, miopen, onednn, mkl) removed, then clustered: "gemm"
 * (aten::mm, addmm, bmm, matmul, linear, cublasSgemm_v2, ...), "gemv",
 * "conv", "attention", "softmax", "layer_norm", "batch_norm", "group_norm",
 * "rms_norm", "reduction" (sum, mean, norm, var, std, ...), "loss" (*_loss,
 * cross_entropy), "embedding",
 * else the normalised name itself. Writes it NUL-terminated into `out`
 * (truncated to capacity - 1 bytes; `out` may be NULL when capacity is 0)
 * and returns its full length, as snprintf does; 0 for a NULL op.
 * Thread-safe. */
PEAT_API size_t peat_op_family(const char* op, char* out, size_t capacity);

/* Sets context->op_kind and context->reduction_length (K) for output
 * `output` of one call of op `op` (the recorded name, e.g.
 * "fc/aten::addmm") from the call's input shapes (input_ndims[i] extents at
 * input_shapes[i], in recorded order) and attributes: the one rule the CLI,
 * Python and peat.torch use (docs/error-models.md, "Op contexts"). An int
 * attribute "K" (or "k") gives K directly. GEMM family: K = the last extent
 * of the product's left operand (input 0; input 1 for addmm, baddbmm,
 * addmv). Convolution: C_in/groups * kernel size (input 1). aten
 * convolution_backward: per output (grad input: CONV with C_out/groups *
 * kernel size; grad weight: CONV, grad bias: REDUCTION, both with N * output
 * size), the outputs present read from the output_mask attribute "arg10".
 * Softmax, norms, sums/means and losses: REDUCTION with K = the terms each
 * output sums (softmax dim; normalized_shape; N x spatial size per channel;
 * the reduced dims), from input 0's shape and the attributes "argN" (the
 * op's N-th argument). Elementwise ops (relu, gelu, exp, tanh, add, the
 * optimizer's addcdiv, ...): ELEMENTWISE. A kind that needs K and has none becomes
 * UNKNOWN unless `signature_k` (the signature's reduction_length) is > 0.
 * Other fields of *context are left as they are.
 * Errors: NULL context or op, n_inputs > 0 with NULL input_ndims or
 * input_shapes, a negative ndim or a NULL shape with ndim > 0, n_attrs > 0
 * with NULL attrs -> INVALID_ARGUMENT; bad struct_size -> VERSION_MISMATCH.
 * Thread-safe. */
PEAT_API peat_status_t peat_detect_context_infer(peat_detect_context_t* context, const char* op, uint64_t n_inputs,
                                                 const int32_t* input_ndims, const int64_t* const* input_shapes,
                                                 const peat_attr_t* attrs, uint64_t n_attrs, uint64_t output,
                                                 int64_t signature_k);

/* Short names: "gemm", "conv", ...; "unknown" for an unknown value. Static
 * storage, never NULL. Thread-safe. */
PEAT_API const char* peat_op_kind_name(peat_op_kind_t kind);

/* Names of narrow formats: "bf16", "fp16", "tf32", "fp8_e4m3", "fp8_e5m2";
 * "none" for -1 and "unknown" for other values. Static storage. Thread-safe. */
PEAT_API const char* peat_float_format_name(peat_float_format_t format);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PEAT_DETECTOR_H */
