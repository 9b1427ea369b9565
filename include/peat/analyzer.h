/*
 * peat/analyzer.h — the error signature of a (golden, candidate) tensor pair,
 * its derived metrics, spatial maps, per-op aggregation over training, and the
 * comparison of training outcomes (loss series, checkpoints).
 *
 * The signature (peat_signature_t) is computed in one pass over both tensors.
 * It is a fixed-size POD: a GPU block, a TBB task, a whole tensor and a whole
 * training run all produce the same type, and peat_signature_merge combines
 * two of them. Merging is associative and commutative: counts add, extrema
 * keep the larger value (the lower element index on a tie, -0 below +0),
 * histograms add, and every floating-point sum is an exact fixed-point sum
 * (peat_exact_sum_t) to which each per-element term is added without
 * rounding. A signature is therefore a function of the multiset of (index,
 * golden, candidate) pairs only: any split of a tensor into pieces, merged in
 * any order and grouping, gives a byte-identical signature. Read the sums as
 * rounded doubles with peat_signature_read_sums (or peat_exact_sum_value).
 *
 * Golden dtype rules: the golden tensor's dtype decides every bit-level metric
 * (bitwise mismatch, ULP distance, XOR bit positions). A candidate of another
 * supported dtype is first converted to the golden's dtype (round to nearest
 * even, NaN stays NaN), then compared. Supported dtypes: f16, bf16, f32, f64.
 * NaN and Inf in either tensor are data, never an error.
 *
 * Element indices reported by the analyzer are the row-major linear index of
 * the element in the tensor's logical shape (strides do not matter), plus
 * config.index_base.
 *
 * Derived metrics (RMSE, SQNR, ...) are functions, not fields. The signature
 * struct only ever grows at its end; histogram lengths are the constants
 * below and never change.
 */
#ifndef PEAT_ANALYZER_H
#define PEAT_ANALYZER_H

#include <peat/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ constants -- */

/* ULP-distance histogram: bucket 0 holds pairs at distance 0 (identical
 * values, +0 and -0 included); bucket b in 1..64 holds distances d with
 * 2^(b-1) <= d < 2^b; bucket 65 (PEAT_SIGNATURE_ULP_NAN_BUCKET) holds pairs
 * where either side is NaN (distance undefined). The distance is measured in
 * the golden dtype, between the values' positions on the ordered line of
 * representable numbers (Inf is one step beyond the largest finite value). */
#define PEAT_SIGNATURE_ULP_BUCKETS 66
#define PEAT_SIGNATURE_ULP_NAN_BUCKET 65

/* Relative-error histogram by binary exponent of r = |c - g| / |g|:
 * bucket 0: r == 0 (equal values, including g == c == 0);
 * bucket 1: 0 < r < 2^-64;
 * bucket 2 + k, k in 0..63: 2^(k-64) <= r < 2^(k-63)  (so bucket 65 is [2^-1, 1));
 * bucket 66 (PEAT_SIGNATURE_REL_LARGE_BUCKET): r >= 1 (finite);
 * bucket 67 (PEAT_SIGNATURE_REL_UNDEFINED_BUCKET): r undefined: g == 0 with
 *   c != 0, or a NaN or Inf on either side.
 * Every pair lands in exactly one bucket. */
#define PEAT_SIGNATURE_REL_BUCKETS 68
#define PEAT_SIGNATURE_REL_MIN_EXPONENT (-64)
#define PEAT_SIGNATURE_REL_LARGE_BUCKET 66
#define PEAT_SIGNATURE_REL_UNDEFINED_BUCKET 67

/* XOR bit-position histogram: entry b counts pairs whose storage words (golden
 * dtype) differ in bit b (bit 0 = least significant mantissa bit; the sign is
 * bit 15 for f16/bf16, 31 for f32, 63 for f64). Entries above the dtype's
 * width stay 0. */
#define PEAT_SIGNATURE_XOR_BITS 64

/* Histogram of the number of differing bits per pair (popcount of the XOR of
 * the storage words): entry n counts pairs that differ in exactly n bits. */
#define PEAT_SIGNATURE_POPCOUNT_BUCKETS 65

/* Lane periods of the spatial map (warp and wavefront widths). */
#define PEAT_SPATIAL_LANES_32 32
#define PEAT_SPATIAL_LANES_64 64

/* signature.flags bits. */
/* Merged signatures had different candidate dtypes; candidate_dtype then holds
 * the one with the smaller (code, bits). */
#define PEAT_SIGNATURE_FLAG_MIXED_CANDIDATE_DTYPES 0x1u

/* ------------------------------------------------------------ signature -- */

/* An exact sum of doubles (a fixed-point superaccumulator): the finite terms
 * add up without rounding into a 2176-bit two's-complement integer N, the sum
 * being N * 2^PEAT_EXACT_SUM_SCALE_EXPONENT (every finite double is a whole
 * multiple of 2^-1088, and 2^64 terms below 2^1024 cannot overflow it). The
 * representation of a value is unique, so equal sums are byte-identical.
 * Non-finite terms set flags instead. Read it with peat_exact_sum_value
 * (rounded to nearest) rather than touching the digits. */
#define PEAT_EXACT_SUM_DIGITS 68
#define PEAT_EXACT_SUM_SCALE_EXPONENT (-1088)
#define PEAT_EXACT_SUM_POS_INF 0x1u /* a +Inf term was added */
#define PEAT_EXACT_SUM_NEG_INF 0x2u /* a -Inf term was added */
#define PEAT_EXACT_SUM_NAN 0x4u     /* a NaN term was added */
typedef struct peat_exact_sum {
  uint32_t digits[PEAT_EXACT_SUM_DIGITS]; /* N, little-endian base-2^32 digits, two's complement */
  uint32_t nonfinite; /* PEAT_EXACT_SUM_* flags of the non-finite terms (the sum is then NaN or +-Inf) */
  uint32_t reserved;  /* 0 */
} peat_exact_sum_t;

/* The error signature of (golden g, candidate c). "Pair" is one element of
 * each at the same logical index. "Finite pair": both g and c are finite
 * (neither NaN nor Inf). Every field below is exact unless it is a double. */
typedef struct peat_signature {
  uint32_t struct_size;  /* sizeof(peat_signature_t); set by peat_signature_init */
  uint32_t flags;        /* PEAT_SIGNATURE_FLAG_* bits */
  DLDataType golden_dtype;    /* dtype of the golden side; bits == 0 while the signature is empty */
  DLDataType candidate_dtype; /* dtype of the candidate side before conversion */
  double rtol;                /* relative tolerance tolerance_fail_count used (resolved default) */
  double atol;                /* absolute tolerance tolerance_fail_count used (resolved default) */
  int64_t reduction_length;   /* reduction length K of the op from the config; 0 = unknown */
  double unit_roundoff;       /* unit roundoff u of the op's arithmetic (config, or golden dtype's) */

  /* ---- counts ---- */
  uint64_t count;                 /* pairs seen */
  uint64_t bitwise_mismatch_count;/* pairs whose storage words differ (after candidate conversion) */
  uint64_t value_mismatch_count;  /* pairs with c != g numerically, two NaNs counting as equal */
  uint64_t golden_nan_count;      /* pairs with g NaN */
  uint64_t golden_inf_count;      /* pairs with g +-Inf */
  uint64_t candidate_nan_count;   /* pairs with c NaN */
  uint64_t candidate_inf_count;   /* pairs with c +-Inf */
  uint64_t new_nonfinite_count;   /* pairs with g finite and c NaN or Inf */
  uint64_t lost_nonfinite_count;  /* pairs with g NaN or Inf and c finite */
  uint64_t sign_flip_count;       /* pairs with g, c both non-zero, not NaN, and of opposite sign */
  uint64_t dropped_count;         /* pairs with c == 0 (+-0) and g non-zero, not NaN ("dropped writes") */
  uint64_t spurious_count;        /* pairs with g == 0 (+-0) and c non-zero, not NaN (the reverse) */
  uint64_t tolerance_fail_count;  /* pairs failing allclose: |c-g| > atol + rtol*|g| for finite
                                     pairs; exactly one NaN; or Inf not matched by the same Inf */
  uint64_t finite_count;          /* finite pairs (the sums and maxima below run over these) */

  /* ---- magnitudes (over finite pairs; errors e = c - g computed in double) ---- */
  double max_abs_error;           /* max |e|; 0 when there is no finite pair */
  int64_t max_abs_error_index;    /* element index of max_abs_error (lowest on ties); -1 if none */
  double max_abs_error_golden;    /* g at max_abs_error_index */
  double max_abs_error_candidate; /* c (converted) at max_abs_error_index */
  double max_rel_error;           /* max |e| / |g| over finite pairs with g != 0; 0 if none */
  int64_t max_rel_error_index;    /* element index of max_rel_error (lowest on ties); -1 if none */
  double max_abs_golden;          /* max |g| over finite pairs */
  /* Exact sums over finite pairs; each term is computed in double per pair
   * (e = c - g, then e*e etc., each rounded once), then added exactly. */
  peat_exact_sum_t sum_error;           /* sum of e (signed: bias) */
  peat_exact_sum_t sum_abs_error;       /* sum of |e| */
  peat_exact_sum_t sum_sq_error;        /* sum of e*e */
  peat_exact_sum_t sum_sq_golden;       /* sum of g*g */
  peat_exact_sum_t sum_sq_candidate;    /* sum of c*c */
  peat_exact_sum_t sum_golden_candidate;/* sum of g*c */

  /* ---- ratio c/g over well-conditioned pairs (finite pair, |g| >= ratio_min_abs, g != 0) ----
   * Kept as exact sums of the deviation d = (c/g) - 1 (each step rounded in
   * double; shifted by 1 so that ratios near 1 keep their precision); the
   * mean and M2 are read with peat_signature_read_sums. */
  uint64_t ratio_count;                 /* pairs in the ratio statistics */
  peat_exact_sum_t ratio_dev_sum;       /* sum of d */
  peat_exact_sum_t ratio_dev_sq_sum;    /* sum of d*d */
  double ratio_min;               /* min of c/g (-0 below +0); 0 when ratio_count == 0 */
  double ratio_max;               /* max of c/g (+0 above -0); 0 when ratio_count == 0 */

  /* ---- distributions (every pair lands in one bucket of each of the first two) ---- */
  uint64_t ulp_hist[PEAT_SIGNATURE_ULP_BUCKETS];       /* ULP distance, log2 buckets (see above) */
  uint64_t rel_hist[PEAT_SIGNATURE_REL_BUCKETS];       /* relative error by binary exponent */
  uint64_t xor_bit_hist[PEAT_SIGNATURE_XOR_BITS];      /* pairs differing in storage bit b */
  uint64_t xor_popcount_hist[PEAT_SIGNATURE_POPCOUNT_BUCKETS]; /* pairs differing in n bits */

  /* ---- appended in 0.2: the highest differing bit of each bitwise mismatch ----
   * A fault on top of a noise floor (a stuck bit, flips of high bits) shows
   * here even when every pair also carries rounding noise in its low bits:
   * the noise moves the highest differing bit only through a carry, whose
   * count halves with each bit, and in either direction. */
  uint64_t xor_top_bit_hist[PEAT_SIGNATURE_XOR_BITS];     /* pairs whose highest differing storage bit is b */
  uint64_t xor_top_bit_set_hist[PEAT_SIGNATURE_XOR_BITS]; /* of those, pairs whose candidate word has bit b
                                                             set (for a non-sign bit: |c| > |g|) */
  /* The grid the candidate's values lie on: entry b counts bitwise-mismatching
   * pairs whose candidate word (golden dtype, sign bit cleared, non-zero) has
   * its lowest set bit at b. A candidate stored in a format with m mantissa
   * bits, widened to a golden with M, never sets a bit below M - m (values in
   * the narrow format's subnormal range set even fewer), so the lowest
   * non-empty entry tells the candidate's storage precision: bit 13 of an f32
   * golden for fp16 or tf32 storage, 16 for bf16, 20 for fp8 e4m3, 21 for
   * e5m2. A candidate at the golden's full precision reaches bit 0 or 1 in all
   * but a 2^-13n chance over n mismatches. (Appended in 0.2.) */
  uint64_t candidate_low_bit_hist[PEAT_SIGNATURE_XOR_BITS];
} peat_signature_t;

/* The size of peat_signature_t before the 0.2 fields (xor_top_bit_hist on).
 * The Detector accepts a signature of this size (an older caller's) and then
 * reads the top-bit histograms as absent. */
#define PEAT_SIGNATURE_SIZE_0_1 offsetof(peat_signature_t, xor_top_bit_hist)

/* What peat_analyze counts as a mismatch in the spatial map. */
typedef int32_t peat_mismatch_kind_t;
enum peat_mismatch_kind_code {
  /* A pair fails the tolerance (it counts in tolerance_fail_count). */
  PEAT_MISMATCH_TOLERANCE = 0,
  /* The storage words differ (it counts in bitwise_mismatch_count). */
  PEAT_MISMATCH_BITWISE = 1
};

/* Settings of one analysis. Fill with peat_signature_config_init, then change
 * what you need. NULL config = all defaults. */
typedef struct peat_signature_config {
  uint32_t struct_size;       /* sizeof(peat_signature_config_t); set by config_init */
  double rtol;                /* relative tolerance; < 0 (default -1) = the golden dtype's default
                                 (peat_default_tolerance) */
  double atol;                /* absolute tolerance; < 0 (default -1) = the golden dtype's default */
  int64_t reduction_length;   /* reduction length K of the op (inner dimension of a GEMM,
                                 C*R*S of a convolution); 0 (default) = unknown; >= 0 */
  double unit_roundoff;       /* u of the op's arithmetic (e.g. 2^-11 for a TF32 GEMM on f32
                                 storage); 0 (default) = the golden dtype's u; >= 0 */
  double ratio_min_abs;       /* pairs enter the c/g ratio statistics when |g| >= this; < 0
                                 (default -1) = the smallest normal number of the golden dtype */
  int64_t index_base;         /* added to every element index reported, so that signatures and
                                 maps of consecutive pieces of one tensor merge with global
                                 indices; >= 0, default 0 */
  int64_t spatial_rows;       /* 2-D view for the spatial map: rows x cols. Both 0 (default):
                                 cols = the last dimension (1 for a 0-d tensor), rows = the
                                 element count / cols. Otherwise rows * cols must equal the
                                 element count; with index_base > 0, or in
                                 peat_analyze_accumulate (pieces of a larger
                                 output), it must cover index_base + count */
  int64_t spatial_cols;       /* see spatial_rows */
  int64_t tile_rows;          /* tile height of the per-tile counts, >= 1; default 32 */
  int64_t tile_cols;          /* tile width of the per-tile counts, >= 1; default 32 */
  peat_mismatch_kind_t map_mismatch; /* what the map counts; default PEAT_MISMATCH_TOLERANCE */
  int32_t num_threads;        /* CPU threads to use: 0 (default) = oneTBB's default, 1 = serial */
} peat_signature_config_t;

/* The spatial map of the mismatches over a 2-D view rows x cols of the output
 * (element index i sits at row i / cols, column i % cols, lane i % 32 and
 * i % 64, tile (row / tile_rows, col / tile_cols)).
 *
 * Buffers: the three arrays row_counts, col_counts and tile_counts are either
 * caller-provided (set the pointer and its capacity in elements before the
 * call; it must hold rows, cols, resp. tile_grid_rows * tile_grid_cols
 * entries, see peat_spatial_map_shape, or the call fails with
 * BUFFER_TOO_SMALL) or library-owned (leave the pointer NULL: the library
 * allocates it on first use, records it in `owned`, and frees it in
 * peat_spatial_map_release). Initialise with peat_spatial_map_init; release
 * with peat_spatial_map_release even when the buffers are yours (it then
 * frees nothing). A map is not thread-safe: one map per concurrent call. */
typedef struct peat_spatial_map {
  uint32_t struct_size;      /* sizeof(peat_spatial_map_t); set by peat_spatial_map_init */
  uint32_t reserved;         /* 0 */
  int64_t rows;              /* rows of the 2-D view (0 while the map is empty) */
  int64_t cols;              /* columns of the 2-D view */
  int64_t tile_rows;         /* tile height */
  int64_t tile_cols;         /* tile width */
  int64_t tile_grid_rows;    /* ceil(rows / tile_rows): tiles down */
  int64_t tile_grid_cols;    /* ceil(cols / tile_cols): tiles across; edge tiles may be partial */
  uint64_t* row_counts;      /* [rows] mismatches per row */
  size_t row_capacity;       /* entries row_counts holds (caller-provided buffers) */
  uint64_t* col_counts;      /* [cols] mismatches per column */
  size_t col_capacity;       /* entries col_counts holds */
  uint64_t* tile_counts;     /* [tile_grid_rows * tile_grid_cols] mismatches per tile, row-major */
  size_t tile_capacity;      /* entries tile_counts holds */
  uint64_t lane32_counts[PEAT_SPATIAL_LANES_32]; /* mismatches per element index mod 32 */
  uint64_t lane64_counts[PEAT_SPATIAL_LANES_64]; /* mismatches per element index mod 64 */
  uint64_t mismatch_count;   /* mismatches in the map */
  int64_t first_mismatch;    /* lowest element index that mismatches; -1 if none */
  int64_t last_mismatch;     /* highest element index that mismatches; -1 if none */
  int64_t longest_run;       /* length of the longest run of consecutive mismatching indices */
  int64_t longest_run_start; /* first index of that run (lowest on ties); -1 if none */
  int64_t covered_begin;     /* the map covers element indices [covered_begin, covered_end) */
  int64_t covered_end;       /* (pieces merge when their ranges touch) */
  int64_t leading_run;       /* mismatching run starting at covered_begin (for merging) */
  int64_t trailing_run;      /* mismatching run ending at covered_end - 1 (for merging) */
  void* owned;               /* library-owned storage, or NULL; never touch */
} peat_spatial_map_t;

/* Fills *signature with the empty signature (the identity of merge) and sets
 * struct_size. NULL-safe. */
PEAT_API void peat_signature_init(peat_signature_t* signature);

/* Fills *config with the defaults above and sets struct_size. NULL-safe. */
PEAT_API void peat_signature_config_init(peat_signature_config_t* config);

/* Fills *map as an empty map without buffers and sets struct_size. NULL-safe. */
PEAT_API void peat_spatial_map_init(peat_spatial_map_t* map);

/* Frees the library-owned buffers of *map and clears its buffer pointers that
 * pointed to them (caller-provided buffers are left alone); the map can be
 * used again. NULL-safe. */
PEAT_API void peat_spatial_map_release(peat_spatial_map_t* map);

/* The default tolerances of a dtype, those of torch.testing.assert_close:
 * f16 rtol 1e-3 atol 1e-5; bf16 rtol 1.6e-2 atol 1e-5; f32 rtol 1.3e-6
 * atol 1e-5; f64 rtol 1e-7 atol 1e-7. Either output may be NULL.
 * Errors: unsupported dtype -> UNSUPPORTED. Thread-safe. */
PEAT_API peat_status_t peat_default_tolerance(DLDataType dtype, double* out_rtol, double* out_atol);

/* Geometry of the spatial map that peat_analyze would build for `golden`
 * under `config` (NULL = defaults): rows, cols and the number of tiles
 * (tile_grid_rows * tile_grid_cols). Any output may be NULL.
 * Errors: as peat_analyze for golden and config. Thread-safe. */
PEAT_API peat_status_t peat_spatial_map_shape(const DLTensor* golden, const peat_signature_config_t* config,
                                              int64_t* out_rows, int64_t* out_cols, int64_t* out_tiles);

/* Computes the signature of (golden, candidate) into *out_signature (whose
 * struct_size the caller set with peat_signature_init), overwriting it, and
 * when out_map is not NULL rebuilds *out_map (counts cleared first, buffers
 * per the rules of peat_spatial_map_t). Both tensors must be host memory
 * (kDLCPU, kDLCUDAHost, kDLROCMHost) with the same shape; any strides and
 * byte offsets are legal. Uses up to config->num_threads threads.
 * Errors: NULL golden/candidate/out_signature -> INVALID_ARGUMENT; malformed
 * tensor (see peat_tensor_numel) -> INVALID_ARGUMENT; shapes differ ->
 * SHAPE_MISMATCH; dtype not f16/bf16/f32/f64 -> UNSUPPORTED; device memory ->
 * UNSUPPORTED (use the backend's signature_accumulate); bad struct_size ->
 * VERSION_MISMATCH; config out of range, spatial view that does not divide
 * the tensor, or out_map whose buffers overlap each other or the signature
 * -> INVALID_ARGUMENT; caller buffer too small -> BUFFER_TOO_SMALL.
 * Thread-safe for distinct outputs. */
PEAT_API peat_status_t peat_analyze(const DLTensor* golden, const DLTensor* candidate,
                                    const peat_signature_config_t* config, peat_signature_t* out_signature,
                                    peat_spatial_map_t* out_map);

/* As peat_analyze, but merges the new signature into *inout_signature and
 * adds the new mismatches to *inout_map (which must be empty or have the same
 * geometry, and cover a range touching this piece's). On error the outputs are
 * unchanged. Thread-safe for distinct outputs. */
PEAT_API peat_status_t peat_analyze_accumulate(const DLTensor* golden, const DLTensor* candidate,
                                               const peat_signature_config_t* config,
                                               peat_signature_t* inout_signature, peat_spatial_map_t* inout_map);

/* *inout_dst = *inout_dst merged with *src. Associative and commutative (see
 * the top of this header); the empty signature is the identity. Errors: NULL
 * -> INVALID_ARGUMENT; bad struct_size -> VERSION_MISMATCH; both non-empty
 * with different golden dtypes, tolerances, K or u -> INVALID_ARGUMENT.
 * Thread-safe for distinct destinations. */
PEAT_API peat_status_t peat_signature_merge(peat_signature_t* inout_dst, const peat_signature_t* src);

/* *inout_dst = *inout_dst merged with *src: counts add, first/last/longest run
 * combine (runs join when the covered ranges touch). The geometry must match
 * (or dst be empty: it then takes src's geometry and buffers per the rules of
 * peat_spatial_map_t), and the covered ranges must touch and not overlap.
 * Errors: NULL -> INVALID_ARGUMENT; geometry or ranges that do not fit ->
 * INVALID_ARGUMENT; caller buffer too small -> BUFFER_TOO_SMALL. */
PEAT_API peat_status_t peat_spatial_map_merge(peat_spatial_map_t* inout_dst, const peat_spatial_map_t* src);

/* The exact sum rounded to the nearest double (ties to even): NaN when a NaN
 * term was added or both a +Inf and a -Inf; +-Inf when one of them was, or
 * when the exact sum lies beyond the double range. Errors: NULL ->
 * INVALID_ARGUMENT. Thread-safe. */
PEAT_API peat_status_t peat_exact_sum_value(const peat_exact_sum_t* sum, double* out);

/* The sums of a signature as doubles (see peat_signature_read_sums). */
typedef struct peat_signature_sums {
  uint32_t struct_size;        /* set by the caller (sizeof(peat_signature_sums_t)) */
  uint32_t reserved;           /* 0 */
  double sum_error;            /* sum of e, rounded to nearest */
  double sum_abs_error;        /* sum of |e|, rounded to nearest */
  double sum_sq_error;         /* sum of e^2, rounded to nearest */
  double sum_sq_golden;        /* sum of g^2, rounded to nearest */
  double sum_sq_candidate;     /* sum of c^2, rounded to nearest */
  double sum_golden_candidate; /* sum of g*c, rounded to nearest */
  double ratio_mean;           /* mean of c/g: 1 + (sum d) / ratio_count; 0 when ratio_count == 0 */
  double ratio_m2;             /* sum of squared deviations of c/g from its mean:
                                  sum d^2 - (sum d)^2 / ratio_count (double-double from the exact
                                  sums, clamped at 0); variance = ratio_m2 / ratio_count */
} peat_signature_sums_t;

/* Reads the exact sums of *signature into *out as doubles (a deterministic
 * function of the signature). Errors: NULL -> INVALID_ARGUMENT; bad
 * struct_size of either -> VERSION_MISMATCH. Thread-safe. */
PEAT_API peat_status_t peat_signature_read_sums(const peat_signature_t* signature, peat_signature_sums_t* out);

/* ------------------------------------------------------ derived metrics -- */
/* Each reads a signature and writes one number. Errors: NULL -> INVALID_ARGUMENT;
 * bad struct_size -> VERSION_MISMATCH. A metric with no data (no finite pair)
 * gives 0, except where stated. Thread-safe. */

/* Root mean square error sqrt(sum e^2 / finite_count). */
PEAT_API peat_status_t peat_signature_rmse(const peat_signature_t* signature, double* out);
/* Relative L2 error sqrt(sum e^2 / sum g^2); +Inf when sum g^2 == 0 < sum e^2. */
PEAT_API peat_status_t peat_signature_relative_l2(const peat_signature_t* signature, double* out);
/* Signal-to-quantisation-noise ratio 10 log10(sum g^2 / sum e^2) in dB; +Inf
 * when sum e^2 == 0. */
PEAT_API peat_status_t peat_signature_sqnr_db(const peat_signature_t* signature, double* out);
/* Cosine similarity sum(g c) / sqrt(sum g^2 * sum c^2); 1 when both are all
 * zero, 0 when exactly one is. */
PEAT_API peat_status_t peat_signature_cosine(const peat_signature_t* signature, double* out);
/* Maximum relative error |e| / |g| over finite pairs with g != 0. */
PEAT_API peat_status_t peat_signature_max_rel_error(const peat_signature_t* signature, double* out);
/* The allclose verdict under the signature's rtol/atol: 1 when no pair failed
 * (tolerance_fail_count == 0), else 0. */
PEAT_API peat_status_t peat_signature_allclose(const peat_signature_t* signature, int32_t* out_pass);
/* Effective mantissa bits of the candidate: with 2^E the lower edge of the
 * relative-error bucket that holds the `quantile` (0 < q <= 1, e.g. 0.99)
 * of the pairs with a defined relative error, bits = -E - 2 (a candidate
 * rounded to p mantissa bits has relative errors below 2^-(p+1)), clamped to
 * [0, mantissa bits of the golden dtype]; the golden's mantissa bits when the
 * quantile falls on exact pairs. Errors: quantile out of range ->
 * INVALID_ARGUMENT; empty signature -> BAD_STATE. */
PEAT_API peat_status_t peat_signature_effective_mantissa_bits(const peat_signature_t* signature,
                                                              double quantile, double* out_bits);

/* The error relative to the floating-point rounding bound of an op with
 * reduction length K (e.g. a dot product of length K), computed with unit
 * roundoff u (both taken from the signature's config):
 *   deterministic = max_rel_error / (2 * gamma_K), gamma_K = K u / (1 - K u)
 *     (Higham; golden and candidate may each be off by gamma_K relative to
 *     sum |a_i b_i|, which |g| stands in for, so <= 1 is within the bound
 *     unless the reduction cancels);
 *   probabilistic = relative_l2 / (sqrt(2 K) * u)  (Higham & Mary's
 *     sqrt(K) u rule for each side, independent errors).
 * Errors: K unknown (0) or K u >= 1 -> BAD_STATE; NULL -> INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_signature_rounding_bound_ratio(const peat_signature_t* signature,
                                                           double* out_deterministic,
                                                           double* out_probabilistic);

/* ---------------------------------------------------------- aggregation -- */

/* A per-op accumulator over calls and steps: for each op id, the merged
 * signature of all its calls, and a compact series of a few scalars per call
 * so that error over training can be plotted. */
typedef struct peat_aggregator peat_aggregator_t;

typedef struct peat_aggregator_options {
  uint32_t struct_size;     /* sizeof(peat_aggregator_options_t); set by options_init */
  uint32_t max_ops;         /* op ids accepted: 0 .. max_ops-1, 1..1048576; default 4096 */
  uint32_t series_capacity; /* series points kept per op, 2..1048576; default 4096. When an
                               op's series is full, every second point is dropped and from
                               then on only every 2nd (then 4th, ...) call is kept, so the
                               series always spans the whole run */
} peat_aggregator_options_t;

/* One point of an op's series: one call. Arrays of it cross the ABI, so this
 * struct is frozen: more per-call scalars would come with a new struct and
 * function, never by growing this one. */
typedef struct peat_series_point {
  int64_t step;                  /* training step given to peat_aggregator_add */
  uint64_t call;                 /* per-op call index given to peat_aggregator_add */
  uint64_t count;                /* pairs of that call's signature */
  uint64_t tolerance_fail_count; /* its tolerance failures */
  uint64_t nonfinite_count;      /* its new_nonfinite_count */
  double max_abs_error;          /* its max |e| */
  double max_rel_error;          /* its max relative error */
  double relative_l2;            /* its relative L2 error (see peat_signature_relative_l2) */
} peat_series_point_t;

/* Fills *options with defaults and sets struct_size. NULL-safe. */
PEAT_API void peat_aggregator_options_init(peat_aggregator_options_t* options);

/* Creates an aggregator (options may be NULL). Errors: NULL out ->
 * INVALID_ARGUMENT; bad struct_size -> VERSION_MISMATCH; options out of range
 * -> INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_aggregator_create(const peat_aggregator_options_t* options,
                                              peat_aggregator_t** out_aggregator);

/* Destroys an aggregator. NULL is a no-op. Not thread-safe with other calls on it. */
PEAT_API void peat_aggregator_destroy(peat_aggregator_t* aggregator);

/* Merges `signature` (one call of op `op` at `step`, its per-op call index
 * `call`) into the op's total and appends a series point. Errors: NULL ->
 * INVALID_ARGUMENT; op >= max_ops -> INVALID_ARGUMENT; signature that cannot
 * merge with the op's total (other golden dtype, tolerance, K) ->
 * INVALID_ARGUMENT. Thread-safe. */
PEAT_API peat_status_t peat_aggregator_add(peat_aggregator_t* aggregator, uint32_t op, int64_t step,
                                           uint64_t call, const peat_signature_t* signature);

/* Copies the merged signature of `op` into *out (struct_size set by the
 * caller); the empty signature for an op never added. Errors: NULL ->
 * INVALID_ARGUMENT; op >= max_ops -> INVALID_ARGUMENT. Thread-safe. */
PEAT_API peat_status_t peat_aggregator_signature(const peat_aggregator_t* aggregator, uint32_t op,
                                                 peat_signature_t* out);

/* Copies up to `capacity` series points of `op` (oldest first) into
 * `points` and writes the number the series holds to *out_count (may be
 * NULL). points may be NULL when capacity is 0 (to ask for the count).
 * Errors: NULL aggregator, or NULL points with capacity > 0 ->
 * INVALID_ARGUMENT; op >= max_ops -> INVALID_ARGUMENT. Thread-safe. */
PEAT_API peat_status_t peat_aggregator_series(const peat_aggregator_t* aggregator, uint32_t op,
                                              peat_series_point_t* points, size_t capacity,
                                              size_t* out_count);

/* Number of calls added for `op` (all of them, also those decimated out of
 * the series). Errors: as peat_aggregator_series. Thread-safe. */
PEAT_API peat_status_t peat_aggregator_call_count(const peat_aggregator_t* aggregator, uint32_t op,
                                                  uint64_t* out_count);

/* ------------------------------------------------- training outcomes -- */

typedef struct peat_loss_compare_options {
  uint32_t struct_size; /* sizeof(peat_loss_compare_options_t); set by options_init */
  double band_abs;      /* noise band, absolute part; >= 0, default 0 */
  double band_rel;      /* noise band, relative part (times |golden|); >= 0, default 0.01 */
  int32_t window;       /* both series are smoothed by a trailing moving average of this many
                           steps before the band test; >= 1, default 1 (no smoothing) */
  int32_t patience;     /* a step counts as beyond the band only when this many consecutive
                           steps are beyond it; >= 1, default 1 */
} peat_loss_compare_options_t;

/* The outcome of comparing a golden loss series with a runtime-FI one. */
typedef struct peat_loss_comparison {
  uint32_t struct_size;        /* set by the caller (sizeof(peat_loss_comparison_t)) */
  uint32_t reserved;           /* 0 */
  int64_t steps;               /* number of steps compared (the common length) */
  double final_golden;         /* golden loss at the last step */
  double final_candidate;      /* candidate loss at the last step */
  double final_delta;          /* final_candidate - final_golden */
  double max_divergence;       /* max |candidate - golden| over the steps (+Inf if a NaN/Inf appears) */
  int64_t max_divergence_step; /* step (steps[] value, or index) of max_divergence; -1 if none */
  int64_t first_beyond_step;   /* first step (steps[] value, or index) of the first run of `patience`
                                  steps whose smoothed |difference| exceeds band_abs + band_rel *
                                  |smoothed golden|; -1 if never */
  int64_t beyond_count;        /* steps whose smoothed difference exceeds the band */
} peat_loss_comparison_t;

PEAT_API void peat_loss_compare_options_init(peat_loss_compare_options_t* options);

/* Compares two loss series of `length` points each, aligned by position:
 * golden[i] and candidate[i] are the losses at step steps[i] (steps may be
 * NULL: step i). NaN/Inf losses are data (a non-finite candidate where the
 * golden is finite is beyond any band). *out's struct_size must be set.
 * Errors: NULL golden/candidate (length > 0) or out -> INVALID_ARGUMENT;
 * length 0 -> INVALID_ARGUMENT; options out of range -> INVALID_ARGUMENT;
 * bad struct_size -> VERSION_MISMATCH. Thread-safe. */
PEAT_API peat_status_t peat_compare_loss(const double* golden, const double* candidate, const int64_t* steps,
                                         size_t length, const peat_loss_compare_options_t* options,
                                         peat_loss_comparison_t* out);

/* A named tensor of a checkpoint (a model parameter, an optimizer state). */
typedef struct peat_named_tensor {
  const char* name;        /* e.g. "layer1.weight"; NUL-terminated, borrowed */
  const DLTensor* tensor;  /* borrowed view */
} peat_named_tensor_t;

/* The drift of one named tensor between two checkpoints (its signature goes
 * to the parallel out_signatures array of peat_compare_checkpoints). */
typedef struct peat_tensor_drift {
  const char* name;           /* borrowed from the input arrays (golden's when present) */
  peat_status_t status;       /* OK; NOT_FOUND when the name is in only one checkpoint;
                                 SHAPE_MISMATCH / UNSUPPORTED / INVALID_ARGUMENT when the pair
                                 cannot be compared (see the last-error message of the call) */
  int32_t reserved;           /* 0 */
} peat_tensor_drift_t;

/* Compares two checkpoints, given as arrays of named tensors: for each name,
 * the signature of (golden tensor, candidate tensor) under `config` (NULL =
 * defaults). Results come in golden's order, then the names only the
 * candidate has: out[i] names result i and gives its status, and
 * out_signatures[i] receives its signature (the empty signature when the
 * status is not OK). Initialise every out_signatures element with
 * peat_signature_init: the library steps through that array by the
 * struct_size of its first element, so a caller built against an older
 * header keeps working when the signature grows. Writes up to `capacity`
 * results and the number of results (n_golden + candidate-only names) into
 * *out_count (may be NULL). A pair that cannot be compared gets its own
 * status; the call itself still succeeds (and the last-error message names
 * the first such tensor).
 * Errors: NULL arrays with non-zero counts, NULL names or tensors, a name
 * twice in one checkpoint, NULL out or out_signatures with capacity > 0 ->
 * INVALID_ARGUMENT; bad struct_size in out_signatures -> VERSION_MISMATCH;
 * capacity too small -> BUFFER_TOO_SMALL (with *out_count set).
 * Thread-safe. */
PEAT_API peat_status_t peat_compare_checkpoints(const peat_named_tensor_t* golden, size_t n_golden,
                                                const peat_named_tensor_t* candidate, size_t n_candidate,
                                                const peat_signature_config_t* config, peat_tensor_drift_t* out,
                                                peat_signature_t* out_signatures, size_t capacity,
                                                size_t* out_count);

/* ------------------------------------------ training impact: noise band -- */

/* The run-to-run noise of a training loss curve, measured from golden reruns,
 * and the verdict on a candidate run against it. The rule (one home: this
 * library; the demo and peat.NoiseBand use it):
 *
 *   s_r(t)  = trailing moving average of run r's loss over `window` steps
 *             (fewer at the start);
 *   compared: t from w - 1 to n - 1, w = min(window, n), n = the common length
 *             of the two series (the first full window on; at least the last point);
 *   dev_i   = max_t |s_i(t) - s_ref(t)| for each golden rerun i = 1..k (other
 *             seed / batch order) against the reference golden run;
 *   band    = factor * max_i dev_i, factor = options.widen, or when widen is 0,
 *             1 + 1.5 / k (k = 3 -> 1.5; k = 1 -> 2.5): the largest of k
 *             deviations is exceeded by a (k+1)-th run with probability
 *             1/(k+1), so the margin shrinks as k grows;
 *   verdict = OUTSIDE_NOISE when |s_c(t) - s_ref(t)| > band for `patience`
 *             consecutive compared steps, INSIDE_NOISE otherwise;
 *   effect  = max_t |s_c(t) - s_ref(t)| / band (band units; <= 1 is inside).
 *
 * The candidate run is meant to repeat the reference run (same seed and batch
 * order) with the candidate swapped in. Parameter drift (e.g. the relative L2
 * of all final parameters against the reference's, from
 * peat_compare_checkpoints) is optional: given for the reruns and the
 * candidate, the candidate's is reported relative to the largest rerun's. */

typedef enum peat_impact_verdict {
  PEAT_IMPACT_INSIDE_NOISE = 0,  /* the candidate's loss stays inside the band */
  PEAT_IMPACT_OUTSIDE_NOISE = 1  /* it leaves the band (for `patience` steps) */
} peat_impact_verdict_t;

typedef struct peat_noise_band_options {
  uint32_t struct_size; /* sizeof(peat_noise_band_options_t); set by options_init */
  int32_t window;       /* moving-average window in steps; >= 1, default 20 */
  double widen;         /* band factor; 0 (default) = 1 + 1.5 / k; else >= 1 and finite */
  int32_t patience;     /* consecutive steps beyond the band for OUTSIDE_NOISE; >= 1, default 1 */
  int32_t reserved;     /* 0 */
} peat_noise_band_options_t;

/* What a band holds (peat_noise_band_info). Loss values are in the loss's units. */
typedef struct peat_noise_band_info_s {
  uint32_t struct_size;   /* set by the caller (sizeof(peat_noise_band_info_t)) */
  uint32_t reruns;        /* k: golden reruns added */
  int64_t length;         /* steps of the reference series */
  int32_t window;         /* as in the options */
  int32_t patience;       /* as in the options */
  double factor;          /* the factor in use (widen, or 1 + 1.5 / k; NaN while k = 0) */
  double max_deviation;   /* max_i dev_i (0 while k = 0) */
  double band;            /* factor * max_deviation (NaN while k = 0) */
  double max_param_drift; /* largest rerun parameter drift given; NaN when none was given */
} peat_noise_band_info_t;

/* The verdict on one candidate run (peat_noise_band_judge). */
typedef struct peat_impact {
  uint32_t struct_size;        /* set by the caller (sizeof(peat_impact_t)) */
  int32_t verdict;             /* peat_impact_verdict_t */
  int64_t steps;               /* compared steps */
  double effect;               /* max_deviation / band: band units (0 when both are 0; +Inf
                                  when the band is 0 and the deviation is not, or the
                                  candidate's loss is NaN/Inf where the reference's is not) */
  double max_deviation;        /* max_t |s_c(t) - s_ref(t)| over the compared steps */
  int64_t max_deviation_step;  /* its step (steps[] value, or index) */
  int64_t first_beyond_step;   /* first step of the first run of `patience` steps beyond
                                  the band (steps[] value, or index); -1 if none */
  int64_t beyond_count;        /* compared steps beyond the band */
  double final_delta;          /* s_c - s_ref at the last compared step */
  double param_drift;          /* the candidate's parameter drift as given (NaN: not given) */
  double param_drift_ratio;    /* param_drift / info.max_param_drift (NaN when either is
                                  missing; +Inf when only the reruns' is 0) */
} peat_impact_t;

typedef struct peat_noise_band peat_noise_band_t;

PEAT_API void peat_noise_band_options_init(peat_noise_band_options_t* options);

/* Creates a band around the reference golden loss series (`length` losses,
 * copied; step i is index i). options may be NULL (defaults). The band is
 * measured once at least one rerun is added (peat_noise_band_add_rerun).
 * Errors: NULL reference (length > 0) or out_band, length 0, a NaN/Inf loss
 * (named by index), options out of range -> INVALID_ARGUMENT; bad
 * options->struct_size -> VERSION_MISMATCH. Destroy with
 * peat_noise_band_destroy. */
PEAT_API peat_status_t peat_noise_band_create(const double* reference, size_t length,
                                              const peat_noise_band_options_t* options,
                                              peat_noise_band_t** out_band);

/* NULL is a no-op. */
PEAT_API void peat_noise_band_destroy(peat_noise_band_t* band);

/* Adds a golden rerun (other seed / batch order; `length` losses, read
 * during the call, compared over the common length with the reference) and
 * its parameter drift against the reference (>= 0, or NaN when not known;
 * unitless, e.g. a relative L2). Errors: NULL band or loss, length 0, a
 * NaN/Inf loss (named by index), a negative or infinite drift ->
 * INVALID_ARGUMENT. Not thread-safe with other calls on the same band. */
PEAT_API peat_status_t peat_noise_band_add_rerun(peat_noise_band_t* band, const double* loss, size_t length,
                                                 double param_drift);

/* Fills *out (its struct_size must be set). Errors: NULL band or out ->
 * INVALID_ARGUMENT; out->struct_size too small -> VERSION_MISMATCH.
 * Thread-safe with other reads. */
PEAT_API peat_status_t peat_noise_band_info(const peat_noise_band_t* band, peat_noise_band_info_t* out);

/* Judges a candidate run's loss series (`length` losses, read during the
 * call; NaN/Inf are data) against the band. steps may be NULL (step i is
 * index i) or give `length` step numbers for the reported steps.
 * param_drift: the candidate's parameter drift against the reference (>= 0;
 * NaN when not known). *out's struct_size must be set.
 * Errors: NULL band, loss or out, length 0, negative drift ->
 * INVALID_ARGUMENT; no rerun added yet -> BAD_STATE; out->struct_size too
 * small -> VERSION_MISMATCH. Thread-safe with other reads. */
PEAT_API peat_status_t peat_noise_band_judge(const peat_noise_band_t* band, const double* loss, size_t length,
                                             const int64_t* steps, double param_drift, peat_impact_t* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PEAT_ANALYZER_H */
