/*
 * peat/injector.h — the fault injector: a library of error models applied to
 * tensors (with an exact ground-truth record), the frequency-based runtime FI
 * scheduler, and candidate-kernel dispatch.
 *
 * Three layers, usable separately:
 *
 *  1. Error models. peat_inject_apply() applies one pseudo-error described by
 *     a peat_inject_spec_t (bit flips, stuck-at bits, value faults, region
 *     corruption, scaling, transposition, shifts, reduced precision,
 *     accumulation-order noise) to an f16, bf16, f32 or f64 tensor on any
 *     backend that implements the `inject` entry, and fills a
 *     peat_inject_truth_t with exactly what changed. Every random choice comes
 *     from Philox4x32-10 keyed by (seed, op, call, element), so one spec gives
 *     the same bits on every run, thread count and backend.
 *
 *  2. The scheduler. A peat_injector_t lives on a peat_session_t. Policies,
 *     matched to op names by glob, say when an op call "fires" (every N-th
 *     call, probability p, step window, first K calls, at most M firings,
 *     phase filter) and what happens then. peat_injector_decide() claims the
 *     op's next call index from the session's shared per-op counter and
 *     returns the action: run the golden kernel, the candidate, both
 *     (shadow: golden propagates, the pair is compared), or inject an error
 *     model into the golden output.
 *
 *  3. Dispatch. Candidates are registered per op (glob) as C function pointers
 *     or "libx.so:symbol" strings. peat_injector_dispatch() runs what the
 *     schedule decides, compares golden and candidate with the analyzer when
 *     both ran, keeps the golden result when the candidate fails, and appends
 *     a firing record to the injector's log (readable here, writable as JSON
 *     lines).
 *
 * Error models and the Detector's verdicts share one enum, peat_error_model_t
 * (DESIGN.md §6): the injector labels what it produced, the Detector what it
 * recognises.
 */
#ifndef PEAT_INJECTOR_H
#define PEAT_INJECTOR_H

#include <peat/analyzer.h>
#include <peat/core.h>
#include <peat/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/* peat_error_model_t (the classes of error) and peat_float_format_t are in
 * peat/core.h: the Detector shares them. */

/* What peat_inject_apply does (the mechanism; the class it produces is the
 * peat_error_model_t recorded in the truth). */
typedef int32_t peat_inject_kind_t;
enum peat_inject_kind_code {
  PEAT_INJECT_BITFLIP = 0,   /* flip `bits` bits in selected elements */
  PEAT_INJECT_STUCK_AT = 1,  /* force bit `bit` to `stuck_value` on all elements / a lane / a region */
  PEAT_INJECT_VALUE = 2,     /* replace selected elements by a value (value_kind) */
  PEAT_INJECT_REGION = 3,    /* fill a region of the 2-D view (fill) */
  PEAT_INJECT_SCALE = 4,     /* multiply every element by alpha (rounded to the dtype, RNE) */
  PEAT_INJECT_TRANSPOSE = 5, /* the rows x cols result written in transposed (cols x rows) layout */
  PEAT_INJECT_SHIFT = 6,     /* every element moved by `offset` positions in row-major order */
  PEAT_INJECT_PRECISION = 7, /* every element rounded to `format` (rounding, saturate) */
  PEAT_INJECT_ULP_NOISE = 8  /* selected elements moved by a few ULP (ulp, distribution) */
};

/* Bit fields a random bit position is drawn from (BITFLIP with bit < 0). */
typedef int32_t peat_bit_field_t;
enum peat_bit_field_code {
  PEAT_BIT_FIELD_ANY = 0,      /* any bit of the storage word */
  PEAT_BIT_FIELD_SIGN = 1,     /* the sign bit */
  PEAT_BIT_FIELD_EXPONENT = 2, /* the exponent bits */
  PEAT_BIT_FIELD_MANTISSA = 3  /* the stored mantissa (fraction) bits */
};

/* Which elements a STUCK_AT fault affects. */
typedef int32_t peat_stuck_scope_t;
enum peat_stuck_scope_code {
  PEAT_STUCK_ALL = 0,    /* every element */
  PEAT_STUCK_LANE = 1,   /* elements whose row-major index i has i % lane_period == lane */
  PEAT_STUCK_REGION = 2  /* the elements of the region (region, first, extent, tiles) */
};

/* Replacement values of PEAT_INJECT_VALUE. */
typedef int32_t peat_value_kind_t;
enum peat_value_kind_code {
  PEAT_VALUE_ZERO = 0,     /* +0 */
  PEAT_VALUE_RANDOM = 1,   /* uniform in [-range, range), rounded to the dtype */
  PEAT_VALUE_NAN = 2,      /* the dtype's canonical quiet NaN */
  PEAT_VALUE_POS_INF = 3,  /* +Inf */
  PEAT_VALUE_NEG_INF = 4,  /* -Inf */
  PEAT_VALUE_CONSTANT = 5  /* `value`, rounded to the dtype (RNE) */
};

/* Region shapes on the 2-D view (rows x cols) of a tensor. */
typedef int32_t peat_region_shape_t;
enum peat_region_shape_code {
  PEAT_REGION_ROWS = 0,      /* rows [first, first + extent) */
  PEAT_REGION_COLUMNS = 1,   /* columns [first, first + extent) */
  PEAT_REGION_TILES = 2,     /* `extent` tiles of tile_rows x tile_cols, starting at tile number
                                `first` in row-major tile order (edge tiles are partial) */
  PEAT_REGION_LAST_TILE = 3, /* the bottom-right tile (partial when rows or cols is not a
                                multiple of the tile size) */
  PEAT_REGION_REMAINDER = 4  /* every element outside the full tiles: the trailing partial
                                row band and column band (empty -> INVALID_ARGUMENT) */
};

/* What fills a region (REGION, and the vacated elements of SHIFT). */
typedef int32_t peat_fill_t;
enum peat_fill_code {
  PEAT_FILL_ZEROS = 0,   /* +0 */
  PEAT_FILL_GARBAGE = 1, /* uniformly random bit patterns (NaN and Inf included) */
  PEAT_FILL_STALE = 2,   /* the element of `stale` (the previous call's output) */
  PEAT_FILL_KEEP = 3     /* SHIFT only: vacated elements keep their value */
};

/* Rounding of PEAT_INJECT_PRECISION. */
typedef int32_t peat_rounding_t;
enum peat_rounding_code {
  PEAT_ROUND_NEAREST_EVEN = 0, /* IEEE round to nearest, ties to even */
  PEAT_ROUND_TRUNCATE = 1      /* round toward zero (drop the low mantissa bits) */
};

/* Distribution of PEAT_INJECT_ULP_NOISE perturbations, in ULP of the dtype. */
typedef int32_t peat_ulp_distribution_t;
enum peat_ulp_distribution_code {
  PEAT_ULP_UNIFORM = 0, /* an integer uniform in {-ulp..-1, 1..ulp} */
  PEAT_ULP_FIXED = 1,   /* exactly +ulp or -ulp, random sign */
  PEAT_ULP_NORMAL = 2   /* round(N(0, ulp^2)); 0 leaves the element unchanged */
};

/* One error model. Fill with peat_inject_spec_init(), then set the fields the
 * kind uses; other fields are ignored. Indices are row-major linear indices
 * of the tensor's logical shape (strided views are honoured). Bits are
 * numbered from 0 = least significant bit of the storage word (f16 and bf16:
 * 0..15, f32: 0..31, f64: 0..63). The 2-D view used by regions, lanes and
 * TRANSPOSE is rows x cols with rows * cols == numel.
 *
 * Element selection (BITFLIP, VALUE, ULP_NOISE), in order of precedence:
 * `elements` (count chosen indices) if not NULL; else every element
 * independently with `probability` if > 0; else `count` distinct random
 * elements. */
typedef struct peat_inject_spec {
  uint32_t struct_size;        /* sizeof(peat_inject_spec_t); set by peat_inject_spec_init */
  peat_inject_kind_t kind;     /* what to do. Default BITFLIP. */

  /* ---- element selection (BITFLIP, VALUE, ULP_NOISE) ---- */
  int64_t count;               /* number of elements, >= 1 (and <= numel). Default 1. */
  const int64_t* elements;     /* `count` chosen indices in [0, numel), duplicates ignored;
                                  NULL = random. Borrowed for the call only. Default NULL. */
  double probability;          /* in [0, 1]; > 0 selects each element independently with
                                  this probability. Default 0. */

  /* ---- bits (BITFLIP; `bit` also for STUCK_AT) ---- */
  int32_t bits;                /* BITFLIP: bits flipped per element, 1..width of the field.
                                  Default 1. */
  int32_t bit;                 /* BITFLIP: >= 0 flips bits [bit, bit + bits) (which must
                                  fit the dtype); -1 draws them at random from `field`.
                                  STUCK_AT: the stuck bit, in [0, width). Default -1. */
  int32_t adjacent;            /* BITFLIP with bit = -1: 1 = the random bits are consecutive
                                  (a burst), 0 = distinct bits anywhere in the field. Default 0. */
  peat_bit_field_t field;      /* BITFLIP with bit = -1: where bits are drawn. Default ANY. */

  /* ---- STUCK_AT ---- */
  int32_t stuck_value;         /* 0 or 1. Default 0. */
  peat_stuck_scope_t scope;    /* ALL, LANE or REGION. Default ALL. */
  int32_t lane_period;         /* LANE: period in elements, 1..1024 (32: a warp, 64: a
                                  wavefront). Default 32. */
  int32_t lane;                /* LANE: which lane, in [0, lane_period). Default 0. */

  /* ---- VALUE ---- */
  peat_value_kind_t value_kind; /* Default ZERO. */
  double value;                /* CONSTANT: the value. Default 0. */
  double range;                /* RANDOM: half-width of the uniform range, finite, > 0.
                                  Default 1. */

  /* ---- 2-D view (REGION, STUCK_AT scope REGION, TRANSPOSE; every kind: the
          truth's row/column bounding box) ---- */
  int64_t rows;                /* rows of the view; 0 with cols 0 = derive: cols = the last
                                  dimension (1 for a 0-D tensor), rows = numel / cols. Default 0. */
  int64_t cols;                /* columns of the view. Default 0. */

  /* ---- region (REGION, STUCK_AT scope REGION) ---- */
  peat_region_shape_t region;  /* Default ROWS. */
  int64_t first;               /* ROWS / COLUMNS: first row / column; TILES: first tile
                                  number. Default 0. */
  int64_t extent;              /* ROWS / COLUMNS / TILES: how many, >= 1, and the region must
                                  lie inside the view. Default 1. */
  int64_t tile_rows;           /* tile height (TILES, LAST_TILE, REMAINDER), >= 1. Default 16. */
  int64_t tile_cols;           /* tile width, >= 1. Default 16. */
  peat_fill_t fill;            /* REGION: ZEROS, GARBAGE or STALE; SHIFT: any. Default ZEROS. */
  const DLTensor* stale;       /* FILL_STALE: the previous call's output, same shape and
                                  dtype, on the same device. Borrowed for the call. Default NULL. */

  /* ---- SCALE, SHIFT ---- */
  double alpha;                /* SCALE: the factor, finite. Default 2. */
  int64_t offset;              /* SHIFT: element i receives old element i - offset (positive
                                  moves data towards higher indices); |offset| < numel.
                                  Default 1. */

  /* ---- PRECISION ---- */
  peat_float_format_t format;  /* Default BF16. */
  peat_rounding_t rounding;    /* Default NEAREST_EVEN. */
  int32_t saturate;            /* 0: overflow as the format does (RNE: Inf, or NaN for E4M3;
                                  truncation: the largest finite value, as IEEE
                                  round-toward-zero); 1: clamp to the largest finite value
                                  (CUDA's satfinite), Inf included. NaN stays NaN. The rounded
                                  value is stored back in the tensor's dtype (exact, except
                                  that a value beyond that dtype's range becomes Inf).
                                  Default 0. */

  /* ---- ULP_NOISE ---- */
  int32_t ulp;                 /* magnitude k in ULP of the dtype, 1..2^20. Results are
                                  clamped to the finite range; NaN/Inf are left alone.
                                  Default 1. */
  peat_ulp_distribution_t distribution; /* Default UNIFORM. */
} peat_inject_spec_t;

/* Number of changed elements a truth record lists individually. */
#define PEAT_INJECT_TRUTH_CAPACITY 64

/* One changed element. Bits are the storage word, zero-extended to 64 bits. */
typedef struct peat_inject_change {
  int64_t index;      /* row-major linear index */
  uint64_t old_bits;  /* storage bits before */
  uint64_t new_bits;  /* storage bits after */
  double old_value;   /* value before (exact, widened to double) */
  double new_value;   /* value after */
} peat_inject_change_t;

/* Ground truth of one application: exactly what changed. An element counts as
 * changed when its storage bits differ (a zero written over a zero does not).
 * Caller sets struct_size (peat_inject_truth_init); a smaller struct from an
 * older header receives its leading part. */
typedef struct peat_inject_truth {
  uint32_t struct_size;          /* sizeof(peat_inject_truth_t); set by peat_inject_truth_init */
  peat_inject_kind_t kind;       /* the spec's kind */
  peat_error_model_t model;      /* the class this injection produces (for scoring the Detector) */
  int32_t element_bits;          /* storage width of the dtype: 16, 32 or 64 */
  int64_t numel;                 /* elements in the tensor */
  int64_t selected;              /* elements the model was applied to (changed or not) */
  int64_t changed;               /* elements whose bits changed */
  int64_t new_nonfinite;         /* changed elements that were finite and are NaN/Inf now */
  int64_t first_index;           /* smallest changed index; -1 when none changed */
  int64_t last_index;            /* largest changed index; -1 when none changed */
  int64_t rows;                  /* the 2-D view used (rows x cols) */
  int64_t cols;
  int64_t row_min, row_max;      /* bounding box of the changed elements in the view; -1 when */
  int64_t col_min, col_max;      /* none changed */
  uint64_t bit_flips[64];        /* over ALL changed elements: how many had bit b flipped */
  uint64_t seed;                 /* the Philox key used */
  uint32_t op;
  uint32_t call;
  int64_t recorded;              /* entries filled in changes[]: min(changed, capacity) */
  peat_inject_change_t changes[PEAT_INJECT_TRUTH_CAPACITY]; /* the changed elements with the
                                  smallest indices, in increasing index order */
} peat_inject_truth_t;

/* Fills *spec with the defaults above for `kind` and sets struct_size.
 * NULL-safe (no-op). An unknown kind is stored as given and refused later by
 * peat_inject_apply. */
PEAT_API void peat_inject_spec_init(peat_inject_spec_t* spec, peat_inject_kind_t kind);

/* Zeroes *truth and sets struct_size. NULL-safe. */
PEAT_API void peat_inject_truth_init(peat_inject_truth_t* truth);

/* Applies the error model `spec` to `tensor`, in place, with the Philox key
 * (seed, op, call). When `source` is not NULL, `tensor` first receives a copy
 * of `source` (same shape and dtype, same device) and the model is applied to
 * that copy: "into an output tensor". `out_truth` (may be NULL) receives the
 * ground truth; its struct_size must be set.
 * Runs on the backend serving tensor->device (the CPU backend uses oneTBB; the
 * result does not depend on the thread count).
 * Errors: NULL spec/tensor, field out of range (bit beyond the dtype, region
 * outside the view, rows*cols != numel, p outside [0,1], ...) ->
 * INVALID_ARGUMENT naming the field; unknown enum value -> INVALID_ARGUMENT;
 * dtype other than f16/bf16/f32/f64 -> UNSUPPORTED; source/stale of another
 * shape or dtype -> SHAPE_MISMATCH; bad struct_size -> VERSION_MISMATCH;
 * backend without `inject` -> UNSUPPORTED. On error the tensor is unchanged.
 * Thread-safe for distinct tensors. */
PEAT_API peat_status_t peat_inject_apply(const peat_inject_spec_t* spec, DLTensor* tensor,
                                         const DLTensor* source, uint64_t seed, uint32_t op,
                                         uint32_t call, peat_inject_truth_t* out_truth);

/* Rounds one value to a narrow format, exactly as PEAT_INJECT_PRECISION does
 * (for scripts and tests). Errors: NULL out, unknown format or rounding ->
 * INVALID_ARGUMENT. Thread-safe. */
PEAT_API peat_status_t peat_inject_round_value(double value, peat_float_format_t format,
                                               peat_rounding_t rounding, int32_t saturate,
                                               double* out_value);

/* Short names ("bitflip", "run_both", ...; peat_error_model_name is in
 * peat/core.h); "unknown" for an unknown value. Static storage, never NULL.
 * Thread-safe. */
PEAT_API const char* peat_inject_kind_name(peat_inject_kind_t kind);

/* ------------------------------------------------------------- scheduler -- */

typedef struct peat_injector peat_injector_t;

/* What the caller of a kernel does for one call. */
typedef int32_t peat_action_t;
enum peat_action_code {
  PEAT_ACTION_INVALID = -1,      /* returned by peat_injector_decide on bad arguments */
  PEAT_ACTION_RUN_GOLDEN = 0,    /* run the trusted kernel only (nothing fires) */
  PEAT_ACTION_RUN_CANDIDATE = 1, /* run the candidate; its result propagates */
  PEAT_ACTION_RUN_BOTH = 2,      /* shadow: run both, the golden result propagates, compare */
  PEAT_ACTION_INJECT = 3         /* run golden, apply the policy's error model to its output */
};

/* Phase filter bits of a policy: (1 << phase) for each allowed peat_phase_t. */
#define PEAT_PHASE_MASK_ALL 0xFu

typedef struct peat_injector_options {
  uint32_t struct_size;      /* sizeof(peat_injector_options_t); set by options_init */
  uint32_t max_firings_logged; /* the firing log keeps the first this many firings (each with
                                  its signature, about 2.5 KiB); later ones are counted as
                                  dropped. 1..2^24. Default 4096. */
} peat_injector_options_t;

/* When a policy fires and what happens then. A call fires when ALL of its
 * conditions hold; when several policies match an op they are tried in the
 * order they were added and the first that fires decides. */
typedef struct peat_injector_policy {
  uint32_t struct_size;        /* sizeof(peat_injector_policy_t); set by peat_injector_policy_init */
  const char* op_pattern;      /* glob over op names: '*' any run, '?' one character,
                                  [abc] [a-z] [!a-z] sets, '\' escapes the next character.
                                  Copied. Required (NULL -> INVALID_ARGUMENT). Default "*". */
  peat_action_t action;        /* RUN_CANDIDATE, RUN_BOTH or INJECT. Default RUN_BOTH. */
  uint64_t every_n;            /* fire on calls c with c % every_n == phase_offset; >= 1.
                                  Default 1 (every call). */
  uint64_t phase_offset;       /* in [0, every_n). Default 0. */
  double probability;          /* an eligible call fires with this probability, in [0, 1],
                                  drawn from Philox keyed by (session seed, op, call): the
                                  same calls fire on every run. Default 1. */
  int64_t step_begin;          /* fire only while the session step is in [step_begin,
                                  step_end); step_end < 0 = no end. Default 0, -1. */
  int64_t step_end;
  uint64_t first_calls;        /* > 0: only calls with index < first_calls are eligible.
                                  Default 0 (no limit). */
  uint64_t max_firings;        /* > 0: the policy fires at most this many times in total (over
                                  all ops it matches). Default 0 (no limit). */
  uint32_t phase_mask;         /* fire only in these phases: bit (1 << PEAT_PHASE_*).
                                  Default PEAT_PHASE_MASK_ALL. */
  const peat_inject_spec_t* spec; /* INJECT: the error model applied to the golden output
                                  (copied, with its `elements`; `stale` must be NULL: with
                                  FILL_STALE, peat_injector_dispatch supplies the op's previous
                                  output, zeros before its first call). Required for INJECT,
                                  ignored otherwise. Default NULL. */
  int32_t output_index;        /* INJECT: which output gets the error model. Default 0. */
  /* ---- 0.2 ---- */
  int32_t run_twice;           /* RUN_BOTH: 1 = the candidate runs a second time on the same
                                  inputs, into other scratch copies, and the two runs are
                                  compared element by element (peat_firing_t.rerun_mismatches,
                                  peat_injector_firing_rerun_signature): non-determinism seen
                                  in the outputs themselves, which two signatures against the
                                  golden cannot show (results swapped between equal rows).
                                  Costs one more candidate run per firing. 0 or 1; ignored
                                  for other actions. Default 0. */
} peat_injector_policy_t;

/* Fill defaults and struct_size. NULL-safe. */
PEAT_API void peat_injector_options_init(peat_injector_options_t* options);
PEAT_API void peat_injector_policy_init(peat_injector_policy_t* policy);

/* Creates an injector on `session` (which must outlive it). `options` may be
 * NULL. Errors: NULL session/out -> INVALID_ARGUMENT; bad struct_size ->
 * VERSION_MISMATCH; option out of range -> INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_injector_create(peat_session_t* session,
                                            const peat_injector_options_t* options,
                                            peat_injector_t** out_injector);

/* Destroys an injector (and closes the shared objects it loaded). NULL is a
 * no-op. Not thread-safe with other calls on the same injector. */
PEAT_API void peat_injector_destroy(peat_injector_t* injector);

/* Adds a policy; *out_index (may be NULL) receives its number (0, 1, ...).
 * Takes effect for every op, including ops already seen. Errors: bad glob,
 * every_n == 0, phase_offset >= every_n, probability outside [0, 1] or NaN,
 * unknown action or RUN_GOLDEN, phase_mask with bits above 3 or 0, INJECT
 * without a spec, invalid spec fields that do not depend on a tensor ->
 * INVALID_ARGUMENT naming the field. Thread-safe. */
PEAT_API peat_status_t peat_injector_add_policy(peat_injector_t* injector,
                                                const peat_injector_policy_t* policy,
                                                uint32_t* out_index);

/* Removes every policy (firing counts restart). Thread-safe. */
PEAT_API peat_status_t peat_injector_clear_policies(peat_injector_t* injector);

/* Claims the next call index of `op` from the session's shared counter (the
 * same counter the profiler reads), stores it in *out_call (may be NULL), and
 * returns what to do for this call. The common case, an op no policy fires
 * for, costs a counter increment and a compare and takes no lock.
 * Returns PEAT_ACTION_INVALID (with the last-error message set) for a NULL
 * injector or an op id the session has not interned; callers then run golden.
 * Thread-safe. */
PEAT_API peat_action_t peat_injector_decide(peat_injector_t* injector, uint32_t op,
                                            uint64_t* out_call);

/* Like peat_injector_decide for a call index the caller already claimed (for
 * example through peat_session_next_call); does not touch the counter.
 * A firing still counts against max_firings. Thread-safe. */
PEAT_API peat_action_t peat_injector_decide_call(peat_injector_t* injector, uint32_t op,
                                                 uint64_t call);

/* Like peat_injector_decide, and also stores in *out_policy (may be NULL) the
 * index of the policy that fired, or -1 when the action is RUN_GOLDEN (or
 * INVALID). For callers that act on the decision themselves: an INJECT is
 * carried out with peat_injector_inject. Thread-safe. */
PEAT_API peat_action_t peat_injector_decide_policy(peat_injector_t* injector, uint32_t op,
                                                   uint64_t* out_call, int32_t* out_policy);

/* Applies the error model of INJECT policy `policy` to `tensor` in place with
 * the Philox key (session seed, op, call): the same bits peat_injector_dispatch
 * would inject for that call. `stale` is the op's previous output for a
 * FILL_STALE model (NULL = zeros); `out_truth` (may be NULL, struct_size set)
 * receives the ground truth. Nothing is logged. Errors: unknown policy index
 * -> NOT_FOUND; a policy whose action is not INJECT -> INVALID_ARGUMENT; the
 * errors of peat_inject_apply. Thread-safe for distinct tensors. */
PEAT_API peat_status_t peat_injector_inject(peat_injector_t* injector, int32_t policy, uint32_t op,
                                            uint64_t call, DLTensor* tensor, const DLTensor* stale,
                                            peat_inject_truth_t* out_truth);

/* ------------------------------------------------------------- dispatch -- */

/* A kernel: reads n_in input tensors, writes n_out output tensors (arrays of
 * DLTensor), with an opaque attribute pointer passed through unchanged.
 * Returns 0 on success and anything else on failure. `ctx` is the pointer
 * given at registration (candidates) or to dispatch (golden). */
typedef int32_t (*peat_kernel_fn)(void* ctx, const DLTensor* inputs, int32_t n_in,
                                  DLTensor* outputs, int32_t n_out, const void* attrs);

/* Registers `fn` (with `ctx`) as the candidate of every op whose name matches
 * the glob `op_pattern`. A later registration matching the same op replaces
 * the earlier one for that op. Errors: NULL injector/pattern/fn, bad glob ->
 * INVALID_ARGUMENT. Thread-safe. */
PEAT_API peat_status_t peat_injector_set_candidate(peat_injector_t* injector,
                                                   const char* op_pattern, peat_kernel_fn fn,
                                                   void* ctx);

/* Same, with the kernel loaded from a shared object: `spec` is
 * "path/to/libx.so:symbol" (split at the last ':'); the library is opened with
 * dlopen(RTLD_NOW | RTLD_LOCAL) and kept open until the injector is destroyed.
 * Errors: malformed spec -> INVALID_ARGUMENT; library that cannot be opened or
 * symbol not found -> NOT_FOUND with dlerror()'s text. Thread-safe. */
PEAT_API peat_status_t peat_injector_set_candidate_symbol(peat_injector_t* injector,
                                                          const char* op_pattern,
                                                          const char* spec, void* ctx);

/* One firing, as the log keeps it. */
typedef struct peat_firing {
  uint32_t struct_size;      /* sizeof(peat_firing_t); set by the caller of peat_injector_firing */
  uint32_t op;               /* op id */
  uint64_t call;             /* call index of the op */
  int64_t step;              /* session step at the decision */
  peat_phase_t phase;        /* session phase at the decision */
  peat_action_t action;      /* what the schedule decided */
  int32_t policy;            /* index of the policy that fired */
  peat_status_t status;      /* OK, or why the candidate's result was not used:
                                NOT_FOUND (no candidate registered), CALLBACK_FAILED (the
                                candidate returned non-zero), CORRUPT_DATA (it wrote NaN in
                                every element of an output); for INJECT the status of the
                                injection */
  int32_t kept_golden;       /* 1 when the golden result is what the caller's outputs hold */
  int32_t compared;          /* 1 when the fields below describe a golden/candidate (or
                                golden/injected) comparison */
  int64_t elements;          /* elements compared, over all outputs */
  int64_t mismatches;        /* elements whose bits differ */
  int64_t new_nonfinite;     /* NaN/Inf in the candidate where golden is finite */
  double max_abs_error;      /* max |c - g| over finite pairs */
  double max_rel_error;      /* max |c - g| / |g| over finite pairs with g != 0 */
  double rms_error;          /* sqrt(mean (c - g)^2) over finite pairs */
  int64_t injected;          /* INJECT: elements the error model changed */
  /* ---- 0.2 ---- */
  int64_t rerun_mismatches;  /* RUN_BOTH with run_twice: elements whose bits differ between
                                the candidate's two runs, over all outputs; -1 when the
                                candidate did not run twice (or its second run failed) */
} peat_firing_t;

/* Runs op `op` the way the schedule decides for its next call:
 *  - RUN_GOLDEN: golden_fn(golden_ctx, inputs, n_in, outputs, n_out, attrs).
 *  - RUN_CANDIDATE: the op's candidate writes `outputs`; if it is missing,
 *    returns non-zero or writes NaN everywhere in an output, golden_fn runs
 *    instead and the firing's status says why.
 *  - RUN_BOTH: golden writes `outputs`; the candidate writes scratch copies
 *    (allocated by the backend of each output); each output pair is compared.
 *    With the policy's run_twice, the candidate runs again into other
 *    scratch copies and its two runs are compared too.
 *  - INJECT: golden writes `outputs`, then the policy's error model is applied
 *    to outputs[output_index] (seed = session seed, op, call), and golden vs
 *    injected is compared.
 * Every firing (all actions but RUN_GOLDEN) is appended to the log, and a
 * candidate failure is also written to the session log as a warning.
 * `out_action` and `out_call` may be NULL. Errors: NULL injector/golden_fn,
 * NULL arrays with a non-zero count, unknown op -> INVALID_ARGUMENT / NOT_FOUND;
 * golden_fn returning non-zero -> CALLBACK_FAILED (the outputs are then
 * whatever golden left). A candidate failure is NOT an error of dispatch.
 * Thread-safe. */
PEAT_API peat_status_t peat_injector_dispatch(peat_injector_t* injector, uint32_t op,
                                              const DLTensor* inputs, int32_t n_in,
                                              DLTensor* outputs, int32_t n_out,
                                              const void* attrs, peat_kernel_fn golden_fn,
                                              void* golden_ctx, peat_action_t* out_action,
                                              uint64_t* out_call);

/* Number of firings in the log, and how many were not kept (log full).
 * out_dropped may be NULL. Thread-safe. */
PEAT_API peat_status_t peat_injector_firing_count(const peat_injector_t* injector,
                                                  uint64_t* out_count, uint64_t* out_dropped);

/* Copies firing `index` (0 = first) into *out, whose struct_size the caller
 * sets (a smaller, older struct receives its leading part). Errors: index out
 * of range -> NOT_FOUND. Thread-safe. */
PEAT_API peat_status_t peat_injector_firing(const peat_injector_t* injector, uint64_t index,
                                            peat_firing_t* out);

/* The full analyzer signature of firing `index`: the golden/candidate (or
 * golden/injected) comparison, merged over the outputs compared (an output
 * the analyzer will not merge with the first, e.g. of another dtype, counts
 * in the firing's summary fields only). out->struct_size is set by the caller
 * (peat_signature_init); a smaller, older struct receives its leading part.
 * Errors: index out of range, or a firing that compared nothing
 * (compared == 0) -> NOT_FOUND. Thread-safe. */
PEAT_API peat_status_t peat_injector_firing_signature(const peat_injector_t* injector, uint64_t index,
                                                      peat_signature_t* out);

/* (0.2) The signature of firing `index`'s second candidate run against its
 * first (a policy with run_twice), merged over the outputs like
 * peat_injector_firing_signature. Pass it to peat_detect as
 * peat_detect_context_t.rerun_diff (with the firing's signature as the one
 * judged) to decide NONDETERMINISM from the outputs themselves. out->struct_size
 * is set by the caller; a smaller, older struct receives its leading part.
 * Errors: index out of range, or a firing whose candidate did not run twice
 * (rerun_mismatches < 0) -> NOT_FOUND. Thread-safe. */
PEAT_API peat_status_t peat_injector_firing_rerun_signature(const peat_injector_t* injector, uint64_t index,
                                                            peat_signature_t* out);

/* Writes the log as JSON lines, one object per firing with the fields of
 * peat_firing_t plus "op_name" and "action_name", to `path` (truncated, or
 * appended to when `append` is non-zero). Errors: NULL arguments ->
 * INVALID_ARGUMENT; the file cannot be written -> IO_ERROR. Thread-safe. */
PEAT_API peat_status_t peat_injector_write_log(const peat_injector_t* injector, const char* path,
                                               int32_t append);

/* Short name of an action ("run_golden", "run_candidate", "run_both",
 * "inject"); "unknown" otherwise. Static storage. Thread-safe. */
PEAT_API const char* peat_action_name(peat_action_t action);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PEAT_INJECTOR_H */
