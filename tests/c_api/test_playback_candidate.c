/* Pure-C test: peat_playback_candidate gives back the kernel a playback holds,
 * so a caller that also calls the candidate itself (the CLI maps the worst
 * call) loads it once, through the library's loader. Includes only <peat/peat.h>. */
#include <peat/peat.h>

#include <stdio.h>

#include "check.h"


int main(void) {
  static const char* path = "c_api_test_playback_candidate.peat";
  float x[4] = {1, 2, 3, 4}, y[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  DLTensor tx = check_tensor_f32(x, 1, shape), ty = check_tensor_f32(y, 1, shape);
  const DLTensor* ins[1] = {&tx};
  const DLTensor* outs[1] = {&ty};
  peat_session_t* s = NULL;
  peat_profiler_t* prof = NULL;
  peat_profiler_options_t po;
  peat_op_record_t rec;
  peat_trace_reader_t* r = NULL;
  peat_playback_t* pb = NULL;
  peat_kernel_fn fn = NULL;
  void* ctx = NULL;
  int marker = 0;
  uint32_t op = 0;

  CHECK_STATUS(peat_session_create(NULL, &s), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_intern_op(s, "copy", &op), PEAT_STATUS_OK);
  peat_profiler_options_init(&po);
  po.path = path;
  CHECK_STATUS(peat_profiler_create(s, &po, &prof), PEAT_STATUS_OK);
  peat_op_record_init(&rec);
  rec.op = op;
  rec.inputs = ins;
  rec.n_inputs = 1;
  rec.outputs = outs;
  rec.n_outputs = 1;
  CHECK_STATUS(peat_profiler_record_op(prof, &rec, NULL, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_profiler_close(prof), PEAT_STATUS_OK);
  peat_profiler_destroy(prof);

  CHECK_STATUS(peat_trace_open(path, NULL, &r), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_create(r, NULL, &pb), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_candidate(pb, &fn, &ctx), PEAT_STATUS_BAD_STATE); /* none yet */
  CHECK_STATUS(peat_playback_set_candidate_symbol(pb, "no-such-library.so:kernel", NULL), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_playback_candidate(pb, &fn, &ctx), PEAT_STATUS_BAD_STATE); /* a failed load sets nothing */
  CHECK_STATUS(peat_playback_set_candidate(pb, check_copy_kernel, &marker), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_candidate(pb, &fn, &ctx), PEAT_STATUS_OK);
  CHECK(fn == check_copy_kernel && ctx == &marker);
  CHECK_STATUS(peat_playback_candidate(pb, &fn, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_candidate(pb, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_candidate(NULL, &fn, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_run(pb), PEAT_STATUS_OK);
  peat_playback_destroy(pb);
  peat_trace_close(r);
  peat_session_destroy(s);
  remove(path);
  return check_report("test_playback_candidate");
}
