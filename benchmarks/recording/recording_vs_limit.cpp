// Sustained recording throughput against its limits, in the same run.
//
// A realistic stream is generated before anything is timed: op records whose
// tensors mix weights (small normal values), ReLU activations (half zeros,
// the rest positive) and gradients (tiny normal values), 256 KiB to 4 MiB
// each, every tensor distinct (no reference can shortcut the work). Then, in
// rounds, each measured on the same bytes:
//   write   a plain sequential write(2) of the stream's bytes to a file in DIR
//           followed by fdatasync: what the disk takes;
//   codec   the trace codec (byte-shuffle + zstd level 1, the profiler's
//           default) over the same tensors on the worker threads (oneTBB, as
//           many threads as the profiler's arena): what compression takes;
//   record  the profiler with its default options recording the stream into
//           DIR, closed and fdatasync'ed: what PEAT achieves.
// The stream is sized by the caller (run.sh: 1 GiB, four times the
// profiler's default 256 MiB queue): a stream the queue can hold measures how
// fast the profiler swallows a burst into memory, one several times larger
// the rate it sustains, with the queue full, then drained at close.
// Each figure is raw tensor MB/s; the ratio is median(record) /
// min(median(write), median(codec)), and the per-round ratios give its spread
// (a shared disk makes single rounds noisy). The process CPU time of the codec
// and record phases is printed too (medians, core-seconds): codec_cpu_s /
// record_cpu_s is about the ratio recording could reach with every core busy
// all the time, which tells a CPU cap from idle time. close_s is the median
// time of the record phase's close + fdatasync (the queue's drain). Prints
// one JSON line.
// Usage: peat_bench_recording_vs_limit SIZE_MIB DIR [ROUNDS]
// RECORDING_PROFILE=record runs the record phase alone (no ratio printed):
// for a profiler such as perf, which then sees only what recording costs.
#include <peat/peat.h>

#include "trace/codec.hpp"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// User + system CPU time of the whole process so far, in seconds.
double process_cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void sync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    (void)::fdatasync(fd);
    ::close(fd);
  }
}

// One record of the stream: a weight, an activation and a gradient.
struct Record {
  std::vector<float> weight, activation, gradient;
};

std::vector<Record> make_stream(uint64_t bytes) {
  std::mt19937 rng(42);
  std::normal_distribution<float> w(0.f, 0.05f), a(0.f, 1.f), g(0.f, 1e-4f);
  std::vector<Record> out;
  const std::size_t sizes[4] = {64 << 10, 256 << 10, 1 << 20, 512 << 10};  // elements
  uint64_t total = 0;
  for (std::size_t r = 0; total < bytes; ++r) {
    Record rec;
    const std::size_t n = sizes[r % 4];
    rec.weight.resize(n);
    rec.activation.resize(n);
    rec.gradient.resize(n);
    for (float& x : rec.weight) x = w(rng);
    for (float& x : rec.activation) x = std::max(0.f, a(rng));
    for (float& x : rec.gradient) x = g(rng);
    total += 3 * n * sizeof(float);
    out.push_back(std::move(rec));
  }
  return out;
}

uint64_t stream_bytes(const std::vector<Record>& s) {
  uint64_t n = 0;
  for (const Record& r : s) n += (r.weight.size() + r.activation.size() + r.gradient.size()) * sizeof(float);
  return n;
}

double plain_write(const std::vector<Record>& s, const std::string& path) {
  ::unlink(path.c_str());
  const auto t0 = Clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return 0;
  for (const Record& r : s)
    for (const std::vector<float>* v : {&r.weight, &r.activation, &r.gradient}) {
      const char* p = reinterpret_cast<const char*>(v->data());
      std::size_t left = v->size() * sizeof(float);
      while (left > 0) {
        const ssize_t n = ::write(fd, p, left);
        if (n <= 0) {
          ::close(fd);
          return 0;
        }
        p += n, left -= static_cast<std::size_t>(n);
      }
    }
  (void)::fdatasync(fd);
  ::close(fd);
  const double t = seconds_since(t0);
  ::unlink(path.c_str());
  return t;
}

double codec_on_workers(const std::vector<Record>& s) {
  const auto t0 = Clock::now();
  tbb::parallel_for(std::size_t{0}, s.size() * 3, [&](std::size_t i) {
    const Record& r = s[i / 3];
    const std::vector<float>& v = i % 3 == 0 ? r.weight : i % 3 == 1 ? r.activation : r.gradient;
    std::vector<std::byte> out;
    out.reserve(v.size() * sizeof(float) / 2);
    peat::impl::trace::encode(PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1, reinterpret_cast<const std::byte*>(v.data()),
                        v.size() * sizeof(float), sizeof(float), out);
  });
  return seconds_since(t0);
}

double record(const std::vector<Record>& s, const std::string& path, uint64_t* file_bytes, double* close_s = nullptr) {
  ::unlink(path.c_str());
  peat_session_t* session = nullptr;
  peat_session_create(nullptr, &session);
  uint32_t op = 0;
  peat_session_intern_op(session, "aten::addmm", &op);
  peat_profiler_options_t po;
  peat_profiler_options_init(&po);
  po.path = path.c_str();
  peat_profiler_t* prof = nullptr;
  if (peat_profiler_create(session, &po, &prof) != PEAT_STATUS_OK) {
    std::fprintf(stderr, "profiler: %s\n", peat_last_error_message());
    std::exit(1);
  }
  const auto t0 = Clock::now();
  for (const Record& r : s) {
    int64_t shape[1] = {static_cast<int64_t>(r.weight.size())};
    DLTensor t[3]{};
    const std::vector<float>* src[3] = {&r.weight, &r.activation, &r.gradient};
    const DLTensor* ins[2] = {&t[0], &t[1]};
    const DLTensor* outs[1] = {&t[2]};
    for (int k = 0; k < 3; ++k) {
      t[k].data = const_cast<float*>(src[k]->data());
      t[k].device = DLDevice{kDLCPU, 0};
      t[k].ndim = 1;
      t[k].dtype = DLDataType{kDLFloat, 32, 1};
      t[k].shape = shape;
    }
    peat_op_record_t rec;
    peat_op_record_init(&rec);
    rec.op = op;
    rec.inputs = ins;
    rec.n_inputs = 2;
    rec.outputs = outs;
    rec.n_outputs = 1;
    if (peat_profiler_record_op(prof, &rec, nullptr, nullptr) != PEAT_STATUS_OK) {
      std::fprintf(stderr, "record: %s\n", peat_last_error_message());
      std::exit(1);
    }
  }
  const double t_loop = seconds_since(t0);
  if (peat_profiler_close(prof) != PEAT_STATUS_OK) {
    std::fprintf(stderr, "close: %s\n", peat_last_error_message());
    std::exit(1);
  }
  sync_file(path);
  const double t = seconds_since(t0);
  if (close_s) *close_s = t - t_loop;
  peat_profiler_stats_t st{};
  st.struct_size = sizeof st;
  peat_profiler_stats(prof, &st);
  *file_bytes = st.file_bytes;
  peat_profiler_destroy(prof);
  peat_session_destroy(session);
  ::unlink(path.c_str());
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SIZE_MIB DIR [ROUNDS]\n", argv[0]);
    return 2;
  }
  const uint64_t size = static_cast<uint64_t>(std::atof(argv[1]) * (1 << 20));
  const std::string dir = argv[2];
  const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 3;
  const std::vector<Record> stream = make_stream(size);
  const double mb = static_cast<double>(stream_bytes(stream)) / 1e6;
  std::vector<double> write_mb_s, codec_mb_s, record_mb_s, ratios, codec_cpu, record_cpu, record_cores, close_s;
  uint64_t file_bytes = 0;
  if (const char* only = std::getenv("RECORDING_PROFILE"); only != nullptr && std::string(only) == "record") {
    for (int r = 0; r < rounds; ++r) std::printf("record %.1f MB/s\n", mb / record(stream, dir + "/trace.peat", &file_bytes));
    return 0;
  }
  for (int r = 0; r < rounds; ++r) {
    const double w = mb / plain_write(stream, dir + "/plain.bin");
    const double c0 = process_cpu_s();
    const double c = mb / codec_on_workers(stream);
    const double c1 = process_cpu_s();
    double drain = 0;
    const double rec = mb / record(stream, dir + "/trace.peat", &file_bytes, &drain);
    close_s.push_back(drain);
    const double c2 = process_cpu_s();
    codec_cpu.push_back(c1 - c0);
    record_cpu.push_back(c2 - c1);
    record_cores.push_back((c2 - c1) * rec / mb);
    write_mb_s.push_back(w);
    codec_mb_s.push_back(c);
    record_mb_s.push_back(rec);
    ratios.push_back(rec / std::min(w, c));
  }
  std::printf("{\"stream_mb\": %.1f, \"threads\": %d, \"write_mb_s\": %.1f, \"codec_mb_s\": %.1f, "
              "\"record_mb_s\": %.1f, \"ratio\": %.3f, \"ratio_min\": %.3f, \"ratio_max\": %.3f, "
              "\"file_mb\": %.1f, \"rounds\": %d, \"codec_cpu_s\": %.3f, \"record_cpu_s\": %.3f, "
              "\"record_cores\": %.2f, \"cpu_bound_ratio\": %.3f, \"close_s\": %.3f}\n",
              mb, tbb::this_task_arena::max_concurrency(), median(write_mb_s), median(codec_mb_s),
              median(record_mb_s), median(record_mb_s) / std::min(median(write_mb_s), median(codec_mb_s)), *std::min_element(ratios.begin(), ratios.end()),
              *std::max_element(ratios.begin(), ratios.end()), static_cast<double>(file_bytes) / 1e6, rounds,
              median(codec_cpu), median(record_cpu), median(record_cores), median(codec_cpu) / median(record_cpu),
              median(close_s));
  return 0;
}
