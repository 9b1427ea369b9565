// gpu_signature_vs_memcpy (DESIGN.md §9): the signature of two 256 MiB f32
// tensors on a GPU, as a fraction of the device's memory bandwidth, measured
// in the same run by a device-to-device copy of the same bytes.
//
//   signature bandwidth = bytes read (2 x 256 MiB) / signature time
//   device bandwidth    = bytes read + written by the copy (2 x 512 MiB) / copy time
//   ratio               = signature bandwidth / device bandwidth   (target >= 0.7)
//
// Both go through the plugin's table (signature_accumulate, copy), so the
// signature time includes what a caller pays: the kernel, the copy of the
// block partials to the host and their merge. Each is timed 10 times after a
// warm-up; the median is used, and the spread of the runs printed with it
// (ratio_range: slowest signature vs fastest copy .. the reverse). Prints one
// JSON object per line.
//
// usage: bench_gpu_signature [BACKEND=cuda] [ELEMENTS=67108864]
// Exit status 77 when the backend has no device.
#include <peat/peat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename Fn>
double time_ms(Fn&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void require(peat_status_t status, const peat_backend_api_t* api, const char* what) {
  if (status == PEAT_STATUS_OK) return;
  std::fprintf(stderr, "%s failed: %s (%s)\n", what, peat_status_string(status), api->last_error());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  const char* name = argc > 1 ? argv[1] : "cuda";
  const int64_t n = argc > 2 ? std::atoll(argv[2]) : int64_t{1} << 26;
  peat_backend_t* backend = nullptr;
  int32_t count = 0;
  peat_status_t status = peat_backend_get(name, &backend);
  if (status == PEAT_STATUS_OK) status = peat_backend_device_count(backend, &count);
  if (status != PEAT_STATUS_OK || count == 0) {
    std::fprintf(stderr, "no %s device: %s\n", name,
                 status != PEAT_STATUS_OK ? peat_last_error_message() : "the driver sees no device");
    return 77;
  }
  const peat_backend_api_t* api = peat_backend_table(backend);
  peat_backend_device_info_t info{};
  info.struct_size = sizeof(info);
  (void)peat_backend_device_info(backend, 0, &info);
  const DLDevice dev{static_cast<DLDeviceType>(api->device_type), 0}, host{kDLCPU, 0};
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);

  // Golden: smooth values; candidate: the golden with rounding-level noise
  // and a few large errors, so that every part of the signature is busy.
  std::vector<float> g(static_cast<std::size_t>(n)), c(static_cast<std::size_t>(n));
  uint32_t s = 12345;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    const float x = std::sin(static_cast<float>(i) * 1e-3f) + static_cast<float>(s >> 8) * 1e-8f;
    g[static_cast<std::size_t>(i)] = x;
    c[static_cast<std::size_t>(i)] = (s & 0xFFFF) == 0 ? x * 1.5f : x * (1.0f + static_cast<float>((s >> 4) & 0xF) * 1e-7f);
  }
  void *dg = nullptr, *dc = nullptr, *dst = nullptr;
  require(api->alloc(0, bytes, &dg), api, "alloc");
  require(api->alloc(0, bytes, &dc), api, "alloc");
  require(api->alloc(0, 2 * bytes, &dst), api, "alloc");
  require(api->copy(dg, dev, g.data(), host, bytes, nullptr), api, "upload");
  require(api->copy(dc, dev, c.data(), host, bytes, nullptr), api, "upload");
  require(api->synchronize(0, nullptr), api, "synchronize");

  int64_t shape[1] = {n};
  DLTensor tg{}, tc{};
  tg.data = dg;
  tg.device = dev;
  tg.ndim = 1;
  tg.dtype = DLDataType{kDLFloat, 32, 1};
  tg.shape = shape;
  tc = tg;
  tc.data = dc;

  const int kRuns = 10;
  std::vector<double> sig_ms, copy_ms;
  peat_signature_t sig;
  for (int r = 0; r <= kRuns; ++r) {  // run 0 is the warm-up
    peat_signature_init(&sig);
    const double t = time_ms([&] { require(api->signature_accumulate(&tg, &tc, nullptr, &sig, nullptr, nullptr), api, "signature"); });
    if (r > 0) sig_ms.push_back(t);
  }
  // The copy: both tensors (2 x bytes) into one buffer, read + write.
  for (int r = 0; r <= kRuns; ++r) {
    const double t = time_ms([&] {
      require(api->copy(dst, dev, dg, dev, bytes, nullptr), api, "copy");
      require(api->copy(static_cast<char*>(dst) + bytes, dev, dc, dev, bytes, nullptr), api, "copy");
      require(api->synchronize(0, nullptr), api, "synchronize");
    });
    if (r > 0) copy_ms.push_back(t);
  }
  const double ts = median(sig_ms), tcp = median(copy_ms);
  const double sig_gbs = 2.0 * static_cast<double>(bytes) / (ts * 1e6);
  const double dev_gbs = 4.0 * static_cast<double>(bytes) / (tcp * 1e6);
  const double ratio = sig_gbs / dev_gbs;
  // The spread: the ratio from the slowest signature against the fastest
  // copy, and from the fastest signature against the slowest copy. The ratio
  // is copy time / signature time x 2 (read+write vs read only).
  const auto [sig_min, sig_max] = std::minmax_element(sig_ms.begin(), sig_ms.end());
  const auto [copy_min, copy_max] = std::minmax_element(copy_ms.begin(), copy_ms.end());
  const double ratio_low = *copy_min / (2.0 * *sig_max), ratio_high = *copy_max / (2.0 * *sig_min);
  // Sanity: the signature saw every element.
  if (sig.count != static_cast<uint64_t>(n)) {
    std::fprintf(stderr, "signature counted %llu elements, expected %lld\n", static_cast<unsigned long long>(sig.count),
                 static_cast<long long>(n));
    return 1;
  }
  std::printf("{\"metric\": \"gpu_signature_vs_memcpy\", \"value\": %.4f, \"unit\": \"ms\", \"baseline\": %.4f, "
              "\"ratio\": %.4f, \"target\": \">=0.7\", \"signature_GBps\": %.1f, \"memcpy_GBps\": %.1f, "
              "\"elements\": %lld, \"device\": \"%s\", \"mismatches\": %llu, \"runs\": %d, "
              "\"signature_ms_range\": [%.4f, %.4f], \"memcpy_ms_range\": [%.4f, %.4f], \"ratio_range\": [%.4f, %.4f]}\n",
              ts, tcp, ratio, sig_gbs, dev_gbs, static_cast<long long>(n), info.name,
              static_cast<unsigned long long>(sig.tolerance_fail_count), kRuns, *sig_min, *sig_max, *copy_min,
              *copy_max, ratio_low, ratio_high);
  api->free(0, dg);
  api->free(0, dc);
  api->free(0, dst);
  return 0;
}
