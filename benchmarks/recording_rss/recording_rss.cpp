// Long recording with bounded memory: records op invocations carrying 16 MiB
// f32 tensors through the profiler (default options: 256 MiB queue, BLOCK
// policy, shuffle+zstd level 1) until SIZE_GIB GiB of tensor bytes have gone
// through, then closes the trace and prints the process's peak RSS
// (getrusage ru_maxrss) next to the RSS before recording started, the bytes
// recorded, the file size and the throughput. The memory held must not grow
// with the amount recorded: peak RSS stays near sources + queue capacity.
// Usage: peat_bench_recording_rss SIZE_GIB TRACE_PATH
#include <peat/peat.h>

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;  // KiB on Linux
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s SIZE_GIB TRACE_PATH\n", argv[0]);
    return 2;
  }
  const double gib = std::atof(argv[1]);
  const std::string path = argv[2];
  constexpr int64_t kElems = 4 << 20;  // 16 MiB of f32 per tensor
  constexpr int kSources = 4;
  // Activation-like data (a smooth signal plus noise) so that compression does
  // realistic work; four different tensors, reused round robin.
  std::vector<std::vector<float>> sources(kSources, std::vector<float>(kElems));
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  for (int s = 0; s < kSources; ++s)
    for (int64_t i = 0; i < kElems; ++i)
      sources[s][i] = std::sin(0.001f * static_cast<float>(i) * static_cast<float>(s + 1)) + noise(rng);

  peat_session_t* session = nullptr;
  peat_session_create(nullptr, &session);
  peat_profiler_options_t po;
  peat_profiler_options_init(&po);
  po.path = path.c_str();
  peat_profiler_t* prof = nullptr;
  if (peat_profiler_create(session, &po, &prof) != PEAT_STATUS_OK) {
    std::fprintf(stderr, "profiler: %s\n", peat_last_error_message());
    return 1;
  }
  uint32_t op = 0;
  peat_session_intern_op(session, "layer.forward", &op);
  const long before_kib = peak_rss_kib();

  const uint64_t target = static_cast<uint64_t>(gib * 1024.0 * 1024.0 * 1024.0);
  const uint64_t per_record = kElems * sizeof(float);
  int64_t shape[1] = {kElems};
  uint64_t recorded_bytes = 0, records = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (recorded_bytes < target) {
    // One element differs per record: every tensor is stored (trace format
    // 1.2 would store a repeated source once, as a reference).
    sources[records % kSources][0] = static_cast<float>(records);
    DLTensor t{sources[records % kSources].data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
    const DLTensor* outs[1] = {&t};
    peat_op_record_t r;
    peat_op_record_init(&r);
    r.op = op;
    r.force = 1;
    r.outputs = outs;
    r.n_outputs = 1;
    int32_t rec = 0;
    if (peat_profiler_record_op(prof, &r, &rec, nullptr) != PEAT_STATUS_OK) {
      std::fprintf(stderr, "record: %s\n", peat_last_error_message());
      return 1;
    }
    if (rec) recorded_bytes += per_record;
    ++records;
    if (records % 64 == 0) peat_profiler_mark_step(prof, static_cast<int64_t>(records / 64));
  }
  if (peat_profiler_close(prof) != PEAT_STATUS_OK) {
    std::fprintf(stderr, "close: %s\n", peat_last_error_message());
    return 1;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  peat_profiler_stats_t s{};
  s.struct_size = sizeof s;
  peat_profiler_stats(prof, &s);
  peat_profiler_destroy(prof);
  peat_session_destroy(session);
  const long peak_kib = peak_rss_kib();
  std::printf("{\"gib_requested\": %.3f, \"tensor_bytes_recorded\": %llu, \"records_written\": %llu, "
              "\"file_bytes\": %llu, \"dropped\": %llu, \"seconds\": %.2f, \"gib_per_s\": %.3f, "
              "\"rss_before_mib\": %.1f, \"peak_rss_mib\": %.1f}\n",
              gib, (unsigned long long)s.raw_bytes, (unsigned long long)s.records_written,
              (unsigned long long)s.file_bytes,
              (unsigned long long)(s.dropped_queue_full + s.dropped_budget + s.dropped_error), secs,
              static_cast<double>(s.raw_bytes) / secs / (1u << 30), before_kib / 1024.0, peak_kib / 1024.0);
  return s.raw_bytes >= target && s.error == PEAT_STATUS_OK ? 0 : 1;
}
