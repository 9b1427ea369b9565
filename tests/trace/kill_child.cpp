// Child of the kill test: records op invocations in an endless loop through the
// public C API. After each record is flushed into the file it writes the
// record's number (8 bytes) to stdout, so the parent knows what was complete
// when it sends SIGKILL.
#include <peat/peat.h>

#include "kill_common.hpp"

#include <cstdio>
#include <cstdlib>

#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s TRACE [zstd]\n", argv[0]);
    return 2;
  }
  peat_session_t* session = nullptr;
  if (peat_session_create(nullptr, &session) != PEAT_STATUS_OK) return 3;
  uint32_t op = 0;
  peat_session_intern_op(session, "kill::op", &op);
  peat_profiler_options_t options;
  peat_profiler_options_init(&options);
  options.path = argv[1];
  options.framework = "kill-test";
  // RAW: large writes, so kills land inside them too; zstd: the codec with
  // XOR deltas (inputs[2]).
  const bool zstd = argc == 3;
  options.codec = zstd ? PEAT_TRACE_CODEC_SHUFFLE_ZSTD : PEAT_TRACE_CODEC_RAW;
  peat_profiler_t* profiler = nullptr;
  if (peat_profiler_create(session, &options, &profiler) != PEAT_STATUS_OK) {
    std::fprintf(stderr, "create: %s\n", peat_last_error_message());
    return 4;
  }
  for (uint64_t i = 0;; ++i) {
    // inputs[1] repeats the tensor of the record before (the previous op's
    // output, as in a training step): the trace stores it as a reference.
    std::vector<float> data = peat_kill::tensor(i), before = peat_kill::tensor(i == 0 ? 0 : i - 1);
    int64_t shape[1] = {peat_kill::elements(i)}, before_shape[1] = {peat_kill::elements(i == 0 ? 0 : i - 1)};
    DLTensor t{}, p{};
    t.data = data.data();
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = 1;
    t.dtype = DLDataType{kDLFloat, 32, 1};
    t.shape = shape;
    p = t;
    p.data = before.data();
    p.shape = before_shape;
    std::vector<float> w = peat_kill::weight(i);
    int64_t w_shape[1] = {peat_kill::kWeightElements};
    DLTensor tw = t;
    tw.data = w.data();
    tw.shape = w_shape;
    const DLTensor* inputs[3] = {&t, &p, &tw};
    peat_op_record_t record;
    peat_op_record_init(&record);
    record.op = op;
    record.call_index = i;
    record.step = static_cast<int64_t>(i / 10);
    record.inputs = inputs;
    record.n_inputs = 3;
    if (peat_profiler_record_op(profiler, &record, nullptr, nullptr) != PEAT_STATUS_OK ||
        peat_profiler_flush(profiler) != PEAT_STATUS_OK) {
      std::fprintf(stderr, "record %llu: %s\n", static_cast<unsigned long long>(i), peat_last_error_message());
      return 5;
    }
    if (::write(1, &i, sizeof i) != static_cast<ssize_t>(sizeof i)) return 6;
  }
}
