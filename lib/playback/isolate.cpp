// See isolate.hpp.
#include "lib/playback/isolate.hpp"

#include <fmt/format.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <new>
#include <cstring>

namespace peat::impl::playback {

namespace {

constexpr unsigned char kCanary = 0xA5;
constexpr std::size_t kAlign = 64;

// What the worker reports back, in a shared page.
struct Control {
  std::atomic<int32_t> state;  // 0 running, 1 returned, 2 threw
  int32_t rc;
  int32_t changed_output;  // first output whose view the candidate changed, or -1
};
static_assert(std::atomic<int32_t>::is_always_lock_free);

std::size_t page_size() {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// One output in shared memory: [guard][slack+canary | data | canary][guard].
struct SharedOutput {
  void* base = MAP_FAILED;
  std::size_t mapped = 0;
  unsigned char* region = nullptr;  // first byte after the leading guard page
  std::size_t region_bytes = 0;     // page multiple
  unsigned char* data = nullptr;
  std::size_t bytes = 0;

  bool create(std::size_t n) {
    const std::size_t page = page_size();
    bytes = n;
    region_bytes = round_up(std::max<std::size_t>(round_up(n, kAlign), kAlign), page);
    mapped = region_bytes + 2 * page;
    base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return false;
    region = static_cast<unsigned char*>(base) + page;
    if (mprotect(base, page, PROT_NONE) != 0 || mprotect(region + region_bytes, page, PROT_NONE) != 0) return false;
    data = region + region_bytes - round_up(n, kAlign);
    std::memset(region, kCanary, region_bytes);
    return true;
  }
  // Bytes of canary overwritten before / after the data.
  std::size_t damaged_before() const {
    std::size_t k = 0;
    for (const unsigned char* p = region; p < data; ++p) k += *p != kCanary;
    return k;
  }
  std::size_t damaged_after() const {
    std::size_t k = 0;
    for (const unsigned char* p = data + bytes; p < region + region_bytes; ++p) k += *p != kCanary;
    return k;
  }
  ~SharedOutput() {
    if (base != MAP_FAILED) munmap(base, mapped);
  }
};

bool same_view(const DLTensor& a, const DLTensor& b) {
  if (a.data != b.data || a.ndim != b.ndim || a.byte_offset != b.byte_offset || a.strides != b.strides ||
      a.dtype.code != b.dtype.code || a.dtype.bits != b.dtype.bits || a.dtype.lanes != b.dtype.lanes ||
      a.device.device_type != b.device.device_type)
    return false;
  if (a.ndim > 0 && (a.shape == nullptr || b.shape == nullptr)) return a.shape == b.shape;
  return a.ndim <= 0 || std::equal(a.shape, a.shape + a.ndim, b.shape);
}

std::string signal_text(int sig) {
  const char* name = sigabbrev_np(sig);
  std::string s = fmt::format("signal {} (SIG{})", sig, name ? name : "?");
  if (sig == SIGSEGV || sig == SIGBUS) s += ": it accessed memory it does not own, e.g. past the end of an output";
  return s;
}

// Waits for `pid` for at most timeout_ms (0 = forever); false on timeout.
bool wait_for(pid_t pid, int& wstatus, uint32_t timeout_ms) {
  if (timeout_ms == 0) return waitpid(pid, &wstatus, 0) == pid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  long nap_ns = 20'000;  // 20 us, doubling to 2 ms: quick candidates return quickly
  for (;;) {
    const pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;  // not our child any more; treat as ended
    if (std::chrono::steady_clock::now() >= deadline) return false;
    const timespec ts{0, nap_ns};
    nanosleep(&ts, nullptr);
    nap_ns = std::min(nap_ns * 2, 2'000'000L);
  }
}

}  // namespace

IsolatedOutcome run_isolated(peat_kernel_fn fn, void* ctx, const DLTensor* inputs, int32_t n_in, DLTensor* outputs,
                             const std::vector<std::size_t>& output_bytes, int32_t n_out, const void* attrs,
                             uint32_t timeout_ms, const std::string& what) {
  IsolatedOutcome out;
  std::vector<SharedOutput> shared(static_cast<std::size_t>(n_out));
  std::vector<DLTensor> views(outputs, outputs + n_out);
  for (int32_t i = 0; i < n_out; ++i) {
    if (!shared[i].create(output_bytes[i])) {
      out.status = PEAT_STATUS_OUT_OF_MEMORY;
      out.message = fmt::format("cannot map {} bytes of shared memory for output {} of the isolated candidate: {}",
                                output_bytes[i], i, std::strerror(errno));
      return out;
    }
    if (output_bytes[i] > 0) std::memcpy(shared[i].data, outputs[i].data, output_bytes[i]);
    views[i].data = shared[i].data;
  }
  void* page = mmap(nullptr, page_size(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    out.status = PEAT_STATUS_OUT_OF_MEMORY;
    out.message = fmt::format("cannot map the worker's control page: {}", std::strerror(errno));
    return out;
  }
  auto* control = new (page) Control{};
  control->changed_output = -1;
  const std::vector<DLTensor> expected = views;

  const pid_t pid = fork();
  if (pid < 0) {
    munmap(page, page_size());
    out.status = PEAT_STATUS_UNAVAILABLE;
    out.message = fmt::format("cannot fork a worker for the isolated candidate: {}", std::strerror(errno));
    return out;
  }
  if (pid == 0) {
    // The worker: call, report, and leave without running any exit handler
    // of the host (atexit, static destructors, sanitizer leak checks).
    try {
      control->rc = fn(ctx, inputs, n_in, views.empty() ? nullptr : views.data(), n_out, attrs);
      for (int32_t i = 0; i < n_out; ++i)
        if (!same_view(views[i], expected[i])) {
          control->changed_output = i;
          break;
        }
      control->state.store(1, std::memory_order_release);
    } catch (...) {
      control->state.store(2, std::memory_order_release);
    }
    _exit(0);
  }

  int wstatus = 0;
  if (!wait_for(pid, wstatus, timeout_ms)) {
    kill(pid, SIGKILL);
    waitpid(pid, &wstatus, 0);
    munmap(page, page_size());
    out.status = PEAT_STATUS_TIMEOUT;
    out.message = fmt::format("candidate {} did not return within {} ms; its worker process was killed", what,
                              timeout_ms);
    return out;
  }
  const int32_t state = control->state.load(std::memory_order_acquire);
  const int32_t rc = control->rc, changed = control->changed_output;
  munmap(page, page_size());
  if (WIFSIGNALED(wstatus)) {
    out.status = PEAT_STATUS_CALLBACK_FAILED;
    out.message = fmt::format("candidate {} crashed: its worker process was killed by {}", what,
                              signal_text(WTERMSIG(wstatus)));
    return out;
  }
  if (state == 0) {
    out.status = PEAT_STATUS_CALLBACK_FAILED;
    out.message = fmt::format(
        "candidate {} ended its worker process (exit status {}) before returning: it called exit(), or a "
        "sanitizer stopped it (e.g. on a write past the end of an output)",
        what, WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
    return out;
  }
  if (state == 2) {
    out.status = PEAT_STATUS_CALLBACK_FAILED;
    out.message = fmt::format("candidate {} threw an exception", what);
    return out;
  }
  for (int32_t i = 0; i < n_out; ++i) {
    const std::size_t before = shared[i].damaged_before(), after = shared[i].damaged_after();
    if (before + after > 0) {
      out.status = PEAT_STATUS_CALLBACK_FAILED;
      out.message = fmt::format(
          "candidate {} wrote outside output {} ({} bytes): {} bytes changed just before it and {} just after it",
          what, i, output_bytes[i], before, after);
      return out;
    }
  }
  if (rc != 0) {
    out.status = PEAT_STATUS_CALLBACK_FAILED;
    out.message = fmt::format("candidate {} returned {}", what, rc);
    return out;
  }
  if (changed >= 0) {
    out.status = PEAT_STATUS_SHAPE_MISMATCH;
    out.message = fmt::format("candidate {} changed the view (data pointer, shape, strides or dtype) of output {}",
                              what, changed);
    return out;
  }
  for (int32_t i = 0; i < n_out; ++i)
    if (output_bytes[i] > 0) std::memcpy(outputs[i].data, shared[i].data, output_bytes[i]);
  return out;
}

}  // namespace peat::impl::playback
