// Write-error test: with RLIMIT_FSIZE set (and SIGXFSZ ignored) writes past the
// limit fail with EFBIG, the way a full disk fails with ENOSPC. The profiler
// must report the error through its status, its stats and the session log,
// stop recording, and let the caller go on; the file keeps every record
// written before the error.
#include <peat/peat.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "expect.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::filesystem::path work = argv[1];
  std::filesystem::remove_all(work);
  std::filesystem::create_directories(work);
  const std::string path = (work / "limited.peat").string();

  constexpr rlim_t kLimit = 300 * 1024;
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit limit{kLimit, kLimit};
  if (setrlimit(RLIMIT_FSIZE, &limit) != 0) {
    std::perror("setrlimit");
    return 3;
  }

  peat_session_t* session = nullptr;
  peat_session_create(nullptr, &session);
  uint32_t op = 0;
  peat_session_intern_op(session, "big::op", &op);
  peat_profiler_options_t options;
  peat_profiler_options_init(&options);
  options.path = path.c_str();
  options.codec = PEAT_TRACE_CODEC_RAW;  // 40 kB per record in the file
  peat_profiler_t* profiler = nullptr;
  if (peat_profiler_create(session, &options, &profiler) != PEAT_STATUS_OK) return 4;

  std::vector<float> data(10000);
  int64_t shape[1] = {10000};
  DLTensor t{};
  t.data = data.data();
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 1;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape;
  const DLTensor* inputs[1] = {&t};
  int ok_calls = 0, io_errors = 0, iterations = 0;
  double training_sum = 0;  // the "training" that must go on
  for (int i = 0; i < 40; ++i) {
    for (std::size_t j = 0; j < data.size(); ++j) data[j] = static_cast<float>(i) + static_cast<float>(j) * 1e-4f;
    peat_op_record_t record;
    peat_op_record_init(&record);
    record.op = op;
    record.inputs = inputs;
    record.n_inputs = 1;
    const peat_status_t s = peat_profiler_record_op(profiler, &record, nullptr, nullptr);
    if (s == PEAT_STATUS_OK) ++ok_calls;
    else if (s == PEAT_STATUS_IO_ERROR) ++io_errors;
    else EXPECT(false, "record %d: unexpected status %d: %s", i, s, peat_last_error_message());
    peat_profiler_flush(profiler);  // make the failure happen at a known point
    training_sum += data[0];
    ++iterations;
  }
  EXPECT(iterations == 40, "the caller's loop did not finish");
  EXPECT(training_sum == 780.0, "training arithmetic disturbed");
  EXPECT(io_errors > 0, "no record call reported the write error");
  EXPECT(ok_calls > 0 && ok_calls < 40, "%d calls succeeded", ok_calls);
  const std::string last = peat_last_error_message();
  EXPECT(last.find("limited.peat") != std::string::npos, "message does not name the file: %s", last.c_str());

  peat_profiler_stats_t st{};
  st.struct_size = sizeof st;
  peat_profiler_stats(profiler, &st);
  EXPECT(st.error == PEAT_STATUS_IO_ERROR, "stats.error is %d", st.error);
  EXPECT(st.records_written > 0 && st.records_written < 40, "records_written %llu",
         static_cast<unsigned long long>(st.records_written));
  EXPECT(peat_profiler_flush(profiler) == PEAT_STATUS_IO_ERROR, "flush does not report the error");
  EXPECT(peat_profiler_close(profiler) == PEAT_STATUS_IO_ERROR, "close does not report the error");
  EXPECT(std::string(peat_last_error_message()).find("File too large") != std::string::npos, "close message: %s",
         peat_last_error_message());
  peat_profiler_destroy(profiler);

  // the session log holds the error
  uint64_t entries = 0, dropped = 0;
  peat_session_log_count(session, &entries, &dropped);
  bool logged = false;
  for (uint64_t i = 0; i < entries; ++i) {
    char buffer[512];
    peat_log_level_t level = 0;
    peat_session_log_entry(session, i, &level, buffer, sizeof buffer, nullptr);
    if (level == PEAT_LOG_ERROR && std::strstr(buffer, "recording stopped") && std::strstr(buffer, "limited.peat"))
      logged = true;
  }
  EXPECT(logged, "no error entry in the session log");
  peat_session_destroy(session);

  // the file ends at a record boundary and holds exactly the records written
  EXPECT(std::filesystem::file_size(path) <= kLimit, "file larger than the limit");
  peat_trace_reader_t* reader = nullptr;
  peat_trace_recovery_t rec{};
  rec.struct_size = sizeof rec;
  EXPECT(peat_trace_recover(path.c_str(), nullptr, &reader, &rec) == PEAT_STATUS_OK, "recover: %s",
         peat_last_error_message());
  EXPECT(rec.records == st.records_written, "recovered %llu of %llu records",
         static_cast<unsigned long long>(rec.records), static_cast<unsigned long long>(st.records_written));
  EXPECT(rec.valid_bytes == rec.file_bytes, "the failed record left a partial tail");
  // The message names where the failed record starts (where the file now
  // ends), not the byte where the write stopped.
  const std::string starts = "starting at byte " + std::to_string(rec.valid_bytes) + ")";
  EXPECT(last.find(starts) != std::string::npos, "message does not name the record's start (%s): %s", starts.c_str(),
         last.c_str());
  uint64_t tensors = 0;
  EXPECT(peat_trace_verify(reader, &tensors) == PEAT_STATUS_OK && tensors == rec.records, "verify: %s",
         peat_last_error_message());
  peat_trace_close(reader);
  std::printf("%d record calls succeeded, %d reported IO_ERROR, %llu records in the file; %d failed expectations\n", ok_calls,
              io_errors, static_cast<unsigned long long>(rec.records), expect_failures);
  std::filesystem::remove_all(work);
  return expect_failures == 0 ? 0 : 1;
}
