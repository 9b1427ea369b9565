/*
 * peat/peat.h — the umbrella header of PEAT, pseudo-error assessment of kernel
 * implementations inside DNN training. Include this one header to get the
 * whole C API. It compiles as C11 and as C++.
 *
 *   core.h      versions, status codes, last-error message, dtype helpers
 *   backend.h   backend plugin ABI and registry
 *   session.h   the run context: op ids, call counters, step, phase, log
 *   analyzer.h  error signatures, spatial maps, aggregation, outcome comparison
 *   injector.h  error models, runtime-FI scheduler, candidate dispatch
 *   trace.h     reading traces (the profiler's files)
 *   profiler.h  recording a training run into a trace
 *   detector.h  error-model verdicts from signatures
 *   playback.h  playback FI: replaying a trace through a candidate kernel
 *   report.h    a self-contained HTML report with charts
 */
#ifndef PEAT_PEAT_H
#define PEAT_PEAT_H

#include <peat/core.h>
#include <peat/backend.h>
#include <peat/session.h>
#include <peat/analyzer.h>
#include <peat/injector.h>
#include <peat/trace.h>
#include <peat/profiler.h>
#include <peat/detector.h>
#include <peat/playback.h>
/* object headers: report */
#include <peat/report.h>

#endif /* PEAT_PEAT_H */
