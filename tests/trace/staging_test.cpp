// Device tensors reach the trace through the backend's asynchronous staging:
// with the stagetest plugin (whose copies land ~2 ms after
// stage_to_host_async returns), every recorded tensor must hold the device
// data, not the staging buffer's initial contents; a staging call that fails
// at once is reported to the caller, one that fails in stage_wait drops the
// record with a warning in the session log, and recording goes on.
#include <peat/peat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "expect.hpp"

namespace {

DLTensor device_tensor(float* data, int64_t* shape) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{kDLExtDev, 0};
  t.ndim = 1;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape;
  return t;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  ::setenv("PEAT_BACKEND_PATH", argv[1], 1);
  const std::filesystem::path work = argv[2];
  std::filesystem::remove_all(work);
  std::filesystem::create_directories(work);
  const std::string path = (work / "staged.peat").string();

  peat_session_options_t so;
  peat_session_options_init(&so);
  so.backend = "stagetest";
  peat_session_t* session = nullptr;
  if (peat_session_create(&so, &session) != PEAT_STATUS_OK) {
    std::fprintf(stderr, "session: %s\n", peat_last_error_message());
    return 3;
  }
  uint32_t op = 0;
  peat_session_intern_op(session, "dev::gemm", &op);
  peat_profiler_options_t po;
  peat_profiler_options_init(&po);
  po.path = path.c_str();
  peat_profiler_t* profiler = nullptr;
  if (peat_profiler_create(session, &po, &profiler) != PEAT_STATUS_OK) return 4;

  constexpr int kCalls = 40;
  std::vector<std::vector<float>> device(kCalls);  // the "device" buffers stay alive until close
  int64_t shape[1] = {1000};
  for (int i = 0; i < kCalls; ++i) {
    device[i].resize(1000);
    for (int j = 0; j < 1000; ++j) device[i][j] = static_cast<float>(i * 1000 + j);
    DLTensor a = device_tensor(device[i].data(), shape);
    DLTensor b = device_tensor(device[i].data() + 500, shape);
    int64_t half[1] = {500};
    b.shape = half;
    const DLTensor* ins[2] = {&a, &b};
    peat_op_record_t rec;
    peat_op_record_init(&rec);
    rec.op = op;
    rec.inputs = ins;
    rec.n_inputs = 2;
    EXPECT(peat_profiler_record_op(profiler, &rec, nullptr, nullptr) == PEAT_STATUS_OK, "call %d: %s", i,
           peat_last_error_message());
  }
  // immediate staging failure: reported to the caller
  float one[1] = {1.0f};
  int64_t shape1[1] = {1};
  DLTensor t1 = device_tensor(one, shape1);
  const DLTensor* ins1[1] = {&t1};
  peat_op_record_t rec;
  peat_op_record_init(&rec);
  rec.op = op;
  rec.inputs = ins1;
  rec.n_inputs = 1;
  EXPECT(peat_profiler_record_op(profiler, &rec, nullptr, nullptr) == PEAT_STATUS_IO_ERROR, "immediate failure");
  EXPECT(std::strstr(peat_last_error_message(), "staging refused") != nullptr, "message: %s", peat_last_error_message());
  // failure in stage_wait: the record is dropped, recording goes on
  float two[2] = {1.0f, 2.0f};
  int64_t shape2[1] = {2};
  DLTensor t2 = device_tensor(two, shape2);
  ins1[0] = &t2;
  EXPECT(peat_profiler_record_op(profiler, &rec, nullptr, nullptr) == PEAT_STATUS_OK, "deferred failure is queued");
  ins1[0] = &t1;
  EXPECT(peat_profiler_record_scalar(profiler, "loss", -1, 0.5) == PEAT_STATUS_OK, "recording goes on");
  EXPECT(peat_profiler_close(profiler) == PEAT_STATUS_OK, "close: %s", peat_last_error_message());
  peat_profiler_stats_t st{};
  st.struct_size = sizeof st;
  peat_profiler_stats(profiler, &st);
  EXPECT(st.records_written == kCalls + 1 && st.dropped_error == 1 && st.error == PEAT_STATUS_OK,
         "written %llu dropped %llu", static_cast<unsigned long long>(st.records_written),
         static_cast<unsigned long long>(st.dropped_error));
  peat_profiler_destroy(profiler);
  uint64_t entries = 0;
  peat_session_log_count(session, &entries, nullptr);
  bool warned = false;
  for (uint64_t i = 0; i < entries; ++i) {
    char buffer[512];
    peat_log_level_t level = 0;
    peat_session_log_entry(session, i, &level, buffer, sizeof buffer, nullptr);
    if (level == PEAT_LOG_WARNING && std::strstr(buffer, "stage_wait")) warned = true;
  }
  EXPECT(warned, "no warning about the failed staging in the session log");
  peat_session_destroy(session);

  peat_trace_reader_t* reader = nullptr;
  EXPECT(peat_trace_open(path.c_str(), nullptr, &reader) == PEAT_STATUS_OK, "open: %s", peat_last_error_message());
  if (reader) {
    std::vector<float> got(1000);
    for (int i = 0; i < kCalls; ++i) {
      peat_trace_tensor_info_t ti{};
      ti.struct_size = sizeof ti;
      peat_trace_tensor_info(reader, static_cast<uint64_t>(i), PEAT_TRACE_SLOT_INPUT, 0, &ti);
      EXPECT(ti.device.device_type == kDLExtDev, "record %d device %d", i, ti.device.device_type);
      EXPECT(peat_trace_load_tensor(reader, static_cast<uint64_t>(i), PEAT_TRACE_SLOT_INPUT, 0, got.data(), 4000) ==
                     PEAT_STATUS_OK &&
                 std::memcmp(got.data(), device[i].data(), 4000) == 0,
             "record %d input 0 differs from the device data", i);
      EXPECT(peat_trace_load_tensor(reader, static_cast<uint64_t>(i), PEAT_TRACE_SLOT_INPUT, 1, got.data(), 2000) ==
                     PEAT_STATUS_OK &&
                 std::memcmp(got.data(), device[i].data() + 500, 2000) == 0,
             "record %d input 1 differs from the device data", i);
    }
    peat_trace_close(reader);
  }
  std::printf("%d staged op records checked; %d expect_failures\n", kCalls, expect_failures);
  std::filesystem::remove_all(work);
  return expect_failures == 0 ? 0 : 1;
}
