/*
 * peat/report.h — a self-contained HTML report of a PEAT assessment.
 *
 * A report builder collects inputs and writes ONE HTML file: inline CSS and
 * inline SVG charts, no script and no network fetch needed to see it,
 * readable on a laptop screen and printable. What it shows depends on what
 * was added:
 *
 *   a trace (peat/trace.h)          run metadata, records per kind and op,
 *                                   steps covered, the recorded scalar series
 *                                   (the golden loss curve);
 *   a playback result (JSON lines   per-op tables of the playback figures
 *   of peat_playback_write_jsonl)   (one table per run when several runs were
 *                                   appended to one file) and the error over
 *                                   training steps (max relative error per
 *                                   record);
 *   a runtime-FI / demo JSON        candidates with their verdict, detection
 *   (make demo's report.json)       evidence and runtime-FI outcome; loss
 *                                   series (golden vs runtime FI, with the
 *                                   noise band); "finetune" loss series;
 *                                   "checkpoint_drift" per parameter tensor;
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
