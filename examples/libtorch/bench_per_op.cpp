// Per-op cost of the libtorch overrides, the C++ counterpart of
// benchmarks/torch_mode (PeatMode, a Python TorchDispatchMode): a loop of
// 8x8 torch::mm calls, 1 thread, timed (1) before libpeat_aten.so is loaded
// (plain torch), (2) loaded but detached (the override calls the golden
// kernel), (3) attached and idle (no policy, no profiler: every call goes
// through peat::injector::dispatch), (4) attached and recording every call.
// Prints one JSON object; benchmarks/libtorch/run.sh puts it beside the
// Python mode's figure. Usage: peat_libtorch_bench [CALLS] [TRACE].
#include <torch/torch.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

double us_per_op(long calls, const torch::Tensor& a, const torch::Tensor& b) {
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; ++i) {
      const torch::Tensor c = torch::mm(a, b);
      (void)c;
    }
    runs.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls);
  }
  std::sort(runs.begin(), runs.end());
  return runs[2];
}

}  // namespace

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 20000;
  const std::string trace = argc > 2 ? argv[2] : "peat_libtorch_bench.peat";
  at::set_num_threads(1);
  torch::manual_seed(0);
  const torch::Tensor a = torch::randn({8, 8}), b = torch::randn({8, 8});
  const double plain = us_per_op(calls, a, b);
  void* lib = dlopen("libpeat_aten.so", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "cannot load libpeat_aten.so: %s\n", dlerror());
    return 1;
  }
  using attach_fn = int (*)(const char*, const char*, const char*, uint64_t);
  using detach_fn = uint64_t (*)();
  auto attach = reinterpret_cast<attach_fn>(dlsym(lib, "peat_aten_attach"));
  auto detach = reinterpret_cast<detach_fn>(dlsym(lib, "peat_aten_detach"));
  if (!attach || !detach) return 1;
  const double detached = us_per_op(calls, a, b);
  if (attach(nullptr, nullptr, nullptr, 0) != 0) return 1;
  const double idle = us_per_op(calls, a, b);
  detach();
  // Recording every call (fewer calls: the trace grows).
  if (attach(trace.c_str(), nullptr, nullptr, 0) != 0) return 1;
  const double recording = us_per_op(calls / 10, a, b);
  detach();
  std::remove(trace.c_str());
  std::printf("{\"op_plain_us\": %.4f, \"op_detached_us\": %.4f, \"op_idle_us\": %.4f, \"op_record_all_us\": %.4f, "
              "\"overhead_us_per_op\": %.4f}\n",
              plain, detached, idle, recording, idle - plain);
  return 0;
}
