/*
 * peat/report.h — a self-contained HTML report of a PEAT assessment.
 *
 * A report builder collects inputs and writes ONE HTML file: inline CSS and
 * inline SVG charts, no script and no network fetch needed to see it,
 * readable on a laptop screen and printable. It leads with a summary
 * (id="summary", one row per candidate; see "inputs through the library"
 * below), then one section per candidate, the training impact, and the
 * inventory of the input files last. Charts draw at most 6 lines each and
 * have bounded sizes. What it shows depends on what was added:
 *
 *   a trace (peat/trace.h)          run metadata, records per kind and op,
 *                                   steps covered, the recorded scalar series
 *                                   (the golden loss curve);
 *   a playback result (JSON lines   per-op tables of the playback figures
 *   of peat_playback_write_jsonl)   (one table per run when several runs were
 *                                   appended to one file) and the error over
 *                                   training steps (max relative error per
 *                                   record);
 *   a runtime-FI / demo JSON        read by docs/schemas/runtime-fi.schema.json:
 *   (make demo's report.json)       the noise band per stage, the runtime-FI
 *                                   runs of each candidate with their loss
 *                                   curves ("loss_series" by run label) and
 *                                   impact, the verdict of candidates not
 *                                   replayed, "checkpoint_drift" per tensor;
 *   signatures (peat_report_add_    relative-error and ULP-distance
 *   signature)                      histograms, the XOR bit-position heat map,
 *                                   the signature table with the detector's
 *                                   verdicts and evidence, and the per-op
 *                                   error series (an analyzer aggregator);
 *   a spatial map (peat_report_     the spatial mismatch map (tile counts) of
 *   add_spatial_map)                the worst call.
 *
 * Every text that comes from an input (op names, paths, evidence, JSON keys)
 * is HTML-escaped. Inputs are untrusted: a malformed file gives a status and
 * a message naming the file (and the line or record) and what is wrong; the
 * report keeps what was added before.
 *
 * Thread safety: a report is used by one thread at a time; several reports
 * may be built at once.
 */
#ifndef PEAT_REPORT_H
#define PEAT_REPORT_H

#include <peat/analyzer.h>
#include <peat/core.h>
#include <peat/detector.h>
#include <peat/playback.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct peat_report peat_report_t;

/* What kind of file peat_report_add_input read. */
typedef int32_t peat_report_input_kind_t;
enum peat_report_input_kind_code {
  PEAT_REPORT_INPUT_TRACE = 0,    /* a PEAT trace (starts with the trace magic) */
  PEAT_REPORT_INPUT_PLAYBACK = 1, /* JSON lines of peat_playback_write_jsonl */
  PEAT_REPORT_INPUT_RUNTIME = 2   /* one JSON object: a runtime-FI / demo report */
};

typedef struct peat_report_options {
  uint32_t struct_size;     /* sizeof(peat_report_options_t); set by options_init */
  uint32_t max_table_rows;  /* rows shown per table before the rest is summarised
                               in one line, 1..1000000; default 200 */
  const char* title;        /* page title, NUL-terminated, copied at create;
                               NULL (default) = "PEAT report" */
} peat_report_options_t;

/* Fills *options with the defaults above and sets struct_size. NULL-safe. */
PEAT_API void peat_report_options_init(peat_report_options_t* options);

/* Creates an empty report. `options` may be NULL (defaults). The library owns
 * the report; free it with peat_report_destroy.
 * Errors: NULL out -> INVALID_ARGUMENT; bad struct_size -> VERSION_MISMATCH;
 * max_table_rows out of range -> INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_report_create(const peat_report_options_t* options, peat_report_t** out_report);

/* Frees a report. NULL is a no-op. */
PEAT_API void peat_report_destroy(peat_report_t* report);

/* Reads the file at `path` (NUL-terminated, borrowed) and adds what it holds;
 * its kind is found from its content (trace magic; a first JSON object with
 * "type" -> playback JSON lines; otherwise one JSON object -> runtime-FI
 * JSON) and written to *out_kind (may be NULL). A trace whose writer was
 * killed is read up to its last intact record. Unknown JSON keys are ignored.
 * Errors: NULL report/path -> INVALID_ARGUMENT; missing file -> NOT_FOUND;
 * read failure -> IO_ERROR; a file that is none of the three kinds, bad JSON
 * (naming the line), or a damaged trace header -> CORRUPT_DATA. On error the
 * report is unchanged. */
PEAT_API peat_status_t peat_report_add_input(peat_report_t* report, const char* path,
                                             peat_report_input_kind_t* out_kind);

/* Adds the signature of one call (or of a merged group of calls) of op `op`
 * compared by `source` (e.g. the candidate's name; NULL or "" = "candidate"),
 * at training step `step` with per-op call index `call`. Signatures of the
 * same (source, op) are merged by an analyzer aggregator and give one table
 * row, the histograms, the bit heat map row and the error-over-steps series.
 * `detection` (may be NULL) is the detector's result for this signature; the
 * last one added per (source, op) is shown with its evidence. Everything is
 * copied. Errors: NULL report/op/signature -> INVALID_ARGUMENT; bad
 * struct_size (signature, detection) -> VERSION_MISMATCH; a signature that
 * cannot merge with the earlier ones of its (source, op) (another golden
 * dtype or tolerance) -> INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_report_add_signature(peat_report_t* report, const char* source, const char* op,
                                                 int64_t step, uint64_t call, const peat_signature_t* signature,
                                                 const peat_detection_t* detection);

/* Adds the spatial mismatch map of one call, titled `label` (e.g.
 * "peat_cand_tile_drop: gemm.fc1 record 12"; NULL = "spatial map"). The
 * report draws the map's tile counts as a heat map, with its row and column
 * counts; when several maps are added, the one with the most mismatches (the
 * worst call) is drawn. Copied. Errors: NULL report/map -> INVALID_ARGUMENT;
 * bad struct_size -> VERSION_MISMATCH; an empty map (rows 0) or one without
 * tile counts -> INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_report_add_spatial_map(peat_report_t* report, const char* label,
                                                   const peat_spatial_map_t* map);

/* ------------------------------------------ inputs through the library (0.2) --
 *
 * The page leads with findings: a summary (id="summary") with one row per
 * candidate -- its verdict (floor + anomaly, from the per-call verdicts of
 * peat_playback_group_verdicts), the key parameter, the ops affected, the
 * training impact in band units and one plain sentence -- then one section
 * per candidate, then the training impact of every runtime-FI run, and the
 * inventory of the inputs (traces, playback JSON lines) last. */

/* Adds the results of a finished playback of candidate `candidate` (its name
 * as the page shows it, e.g. "peat_cand_bf16"; NULL or "" = "candidate").
 * Read through the public playback API and copied: per op and output the
 * per-call verdicts (peat_playback_group_verdicts), the Detector's detection
 * of the call that names the output's top model (peat_playback_result_detection;
 * its effective mantissa bits are the one figure the page shows for that op
 * and output), the merged signature, and every compared call's max relative
 * error over the steps. Adding a second playback under the same name replaces
 * the first. The playback may be destroyed afterwards.
 * A playback that has not run adds a candidate with no calls. Thread safety:
 * the playback must not run meanwhile.
 * Errors: NULL report/playback -> INVALID_ARGUMENT; errors of the playback
 * API as they come (e.g. the Detector's on a call). */
PEAT_API peat_status_t peat_report_add_playback(peat_report_t* report, const char* candidate,
                                                const peat_playback_t* playback);

/* The call of `candidate`'s playback whose spatial map tells most about its
 * error: the call whose own top verdict is the op output's REGION, STUCK_AT
 * or DROPPED_WRITES model (the one with most mismatches among them), else
 * the call with most tolerance failures, then mismatches; none when every
 * call is within tolerance without such a verdict. Writes the trace
 * record index and the output index (both may be NULL). A caller that holds
 * the candidate kernel maps that call (peat_analyze with a spatial config)
 * and adds it with peat_report_add_candidate_map.
 * Errors: NULL report/candidate -> INVALID_ARGUMENT; no playback of that
 * name, or no such call -> NOT_FOUND. */
PEAT_API peat_status_t peat_report_focus_call(const peat_report_t* report, const char* candidate,
                                              uint64_t* out_record, uint64_t* out_output);

/* Adds the spatial map of one call of `candidate` (NUL-terminated; shown in
 * that candidate's section, scaled to at most 48 x 48 cells with row and
 * column labels), titled `label` (NULL = "spatial map"). The last one added
 * per candidate is drawn. Copied. Errors: as peat_report_add_spatial_map;
 * NULL candidate -> INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_report_add_candidate_map(peat_report_t* report, const char* candidate,
                                                     const char* label, const peat_spatial_map_t* map);

/* Adds the golden loss curve of stage `stage` (NULL or "" = "train") with the
 * band measured around it: the band's reference series, its width, k, factor
 * and window (peat_noise_band_info) are copied; the runtime-FI runs of the
 * stage added later are judged against it when they bring no verdict of
 * their own. One band per stage (a second replaces the first).
 * Errors: NULL report/band -> INVALID_ARGUMENT; a band with no rerun ->
 * BAD_STATE. */
PEAT_API peat_status_t peat_report_add_noise_band(peat_report_t* report, const char* stage,
                                                  const peat_noise_band_t* band);

/* One runtime-FI run: the candidate substituted on a schedule in live
 * training, its loss curve and its training impact. Strings are
 * NUL-terminated and copied; arrays are read during the call. */
typedef struct peat_report_fi_run {
  uint32_t struct_size;     /* sizeof(peat_report_fi_run_t); set by peat_report_fi_run_init */
  uint32_t reserved;        /* 0 */
  const char* candidate;    /* candidate name (required), as given to peat_report_add_playback */
  const char* label;        /* the run's label; NULL (default) = "<candidate> 1/<every>" */
  const char* stage;        /* NULL or "" (default) = "train" */
  uint64_t every;           /* the candidate ran at every N-th call; 0 (default) = not given */
  int64_t candidate_calls;  /* calls the candidate ran; -1 (default) = not given */
  const double* loss;       /* `length` losses (NaN/Inf are data), may be NULL when length is 0 */
  size_t length;
  const int64_t* steps;     /* NULL (default): step i is index i; else `length` step numbers */
  const peat_impact_t* impact; /* the run's verdict (peat_noise_band_judge); NULL (default) = judged
                               here against the stage's band (peat_report_add_noise_band) */
  double param_drift;       /* parameter drift for the judgement; NaN (default) = not given */
  double test_accuracy;     /* NaN (default) = not given */
} peat_report_fi_run_t;

/* Fills *run with the defaults above and sets struct_size. NULL-safe. */
PEAT_API void peat_report_fi_run_init(peat_report_fi_run_t* run);

/* Adds a runtime-FI run (the FI-run builder: several runs of one candidate at
 * several frequencies and stages each make one row of its impact).
 * Errors: NULL report/run/candidate, loss NULL with length > 0, impact with a
 * wrong struct_size or an unknown verdict -> INVALID_ARGUMENT; bad
 * struct_size -> VERSION_MISMATCH; the stage's band refusing the series
 * (peat_noise_band_judge) -> its status. */
PEAT_API peat_status_t peat_report_add_fi_run(peat_report_t* report, const peat_report_fi_run_t* run);

/* Renders the HTML page into `buffer` (NUL-terminated). *out_length (may be
 * NULL) receives the length in bytes without the NUL; when `capacity` is too
 * small (buffer may then be NULL), nothing is written, the needed length is
 * still reported, and the call returns BUFFER_TOO_SMALL.
 * Errors: NULL report -> INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_report_render_html(const peat_report_t* report, char* buffer, size_t capacity,
                                               size_t* out_length);

/* Renders the HTML page and writes it to `path` (replaced when it exists).
 * Errors: NULL -> INVALID_ARGUMENT; missing directory -> NOT_FOUND; the file
 * cannot be written -> IO_ERROR. */
PEAT_API peat_status_t peat_report_write_html(const peat_report_t* report, const char* path);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PEAT_REPORT_H */
