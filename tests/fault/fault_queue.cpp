// Fault test: the recorder's memory budget (queue_bytes) is exhausted by four
// threads recording 256 KiB tensors faster than the writer can compress them
// (zstd level 9). With PEAT_QUEUE_DROP the excess records are dropped and
// counted, every call returns OK (training is never disturbed), the queue
// never holds more than its budget plus one record, and every record a call
// reported as recorded is in the file, intact. With PEAT_QUEUE_BLOCK nothing
// is dropped: the callers wait, and all records arrive.
// Usage: fault_queue WORKDIR
#include <peat/peat.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

int failures = 0;
void expect(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

constexpr int kThreads = 4;
constexpr int kPerThread = 16;
constexpr int64_t kElems = 64 * 1024;  // 256 KiB of f32 per record
constexpr uint64_t kQueue = 1u << 20;  // the smallest queue allowed: 1 MiB

void run(const std::string& path, peat_queue_policy_t policy) {
  peat_session_t* session = nullptr;
  peat_session_create(nullptr, &session);
  peat_profiler_options_t po;
  peat_profiler_options_init(&po);
  po.path = path.c_str();
  po.queue_bytes = kQueue;
  po.full_queue_policy = policy;
  po.zstd_level = 9;  // a writer far slower than the producers, so the queue fills
  peat_profiler_t* prof = nullptr;
  if (peat_profiler_create(session, &po, &prof) != PEAT_STATUS_OK) {
    expect(false, std::string("create: ") + peat_last_error_message());
    return;
  }
  uint32_t op = 0;
  peat_session_intern_op(session, "fill", &op);
  std::mutex mu;
  std::set<uint64_t> recorded_calls;
  std::atomic<int> bad_status{0};
  std::atomic<uint64_t> max_queue{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(t));
      std::vector<float> x(kElems);
      int64_t shape[1] = {kElems};
      DLTensor tx{x.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
      const DLTensor* outs[1] = {&tx};
      for (int i = 0; i < kPerThread; ++i) {
        for (float& v : x) v = static_cast<float>(rng()) * 1e-9f;  // incompressible-ish
        peat_op_record_t r;
        peat_op_record_init(&r);
        r.op = op;
        r.force = 1;
        r.outputs = outs;
        r.n_outputs = 1;
        int32_t recorded = 0;
        uint64_t call = 0;
        if (peat_profiler_record_op(prof, &r, &recorded, &call) != PEAT_STATUS_OK) ++bad_status;
        peat_profiler_stats_t s{};
        s.struct_size = sizeof s;
        peat_profiler_stats(prof, &s);
        uint64_t m = max_queue.load();
        while (s.queue_bytes > m && !max_queue.compare_exchange_weak(m, s.queue_bytes)) {
        }
        if (recorded) {
          std::lock_guard lock(mu);
          recorded_calls.insert(call);
        }
      }
    });
  for (auto& th : threads) th.join();
  expect(peat_profiler_close(prof) == PEAT_STATUS_OK, "close OK");
  peat_profiler_stats_t s{};
  s.struct_size = sizeof s;
  peat_profiler_stats(prof, &s);
  const uint64_t total = kThreads * kPerThread;
  const char* name = policy == PEAT_QUEUE_DROP ? "DROP" : "BLOCK";
  std::printf("   %s: %llu written, %llu dropped (queue full), queue peak %llu bytes of %llu\n", name,
              (unsigned long long)s.records_written, (unsigned long long)s.dropped_queue_full,
              (unsigned long long)max_queue.load(), (unsigned long long)kQueue);
  expect(bad_status == 0, std::string(name) + ": every record call returned OK");
  expect(s.records_written + s.dropped_queue_full == total, std::string(name) + ": written + dropped == calls");
  expect(s.records_written == recorded_calls.size(), std::string(name) + ": written == calls reported as recorded");
  expect(max_queue.load() <= kQueue + kElems * 4 + 4096, std::string(name) + ": queue stayed within its budget");
  if (policy == PEAT_QUEUE_DROP)
    expect(s.dropped_queue_full > 0, "DROP: the budget was exhausted and records were dropped and counted");
  else
    expect(s.dropped_queue_full == 0 && s.records_written == total, "BLOCK: nothing dropped");
  uint64_t logged = 0, warnings = 0;
  peat_session_log_count(session, &logged, nullptr);
  for (uint64_t i = 0; i < logged; ++i) {
    char text[512];
    peat_log_level_t level = 0;
    peat_session_log_entry(session, i, &level, text, sizeof text, nullptr);
    if (level == PEAT_LOG_WARNING && std::strstr(text, "queue is full")) ++warnings;
  }
  if (policy == PEAT_QUEUE_DROP)
    expect(warnings >= 1, "DROP: the drops are logged on the session (" + std::to_string(warnings) + " warnings)");
  else
    expect(warnings == 0, "BLOCK: no drop warning");
  peat_profiler_destroy(prof);
  peat_session_destroy(session);

  // Every record reported as recorded is in the file, with its tensor intact.
  peat_trace_reader_t* reader = nullptr;
  if (peat_trace_open(path.c_str(), nullptr, &reader) != PEAT_STATUS_OK) {
    expect(false, std::string("open: ") + peat_last_error_message());
    return;
  }
  uint64_t count = 0, tensors = 0;
  peat_trace_record_count(reader, &count);
  std::set<uint64_t> in_file;
  for (uint64_t i = 0; i < count; ++i) {
    peat_trace_record_info_t info{};
    info.struct_size = sizeof info;
    if (peat_trace_record_info(reader, i, &info) == PEAT_STATUS_OK && info.kind == PEAT_TRACE_KIND_OP)
      in_file.insert(info.call_index);
  }
  expect(in_file == recorded_calls, std::string(name) + ": the file holds exactly the recorded calls");
  expect(peat_trace_verify(reader, &tensors) == PEAT_STATUS_OK && tensors == recorded_calls.size(),
         std::string(name) + ": every tensor verifies (checksums)");
  peat_trace_close(reader);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::filesystem::path work = argv[1];
  std::filesystem::create_directories(work);
  run((work / "drop.peat").string(), PEAT_QUEUE_DROP);
  run((work / "block.peat").string(), PEAT_QUEUE_BLOCK);
  std::filesystem::remove_all(work);
  std::printf("%s\n", failures ? "FAILED" : "queue budget exhaustion handled per policy, no recorded record lost");
  return failures ? 1 : 0;
}
