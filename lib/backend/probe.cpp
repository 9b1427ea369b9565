// See probe.hpp. The child reports through a pipe: the empty string when the
// table is usable, the refusal reason otherwise. Anything else (a signal, an
// exit before reporting, silence past the limit) is the crash we guard against.
#include "lib/backend/probe.hpp"

#include "lib/backend/backend.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace peat::impl::backend {

namespace {

constexpr int kProbeSeconds = 30;

void write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t w = ::write(fd, s.data() + done, s.size() - done);
    if (w <= 0 && errno != EINTR) return;
    if (w > 0) done += static_cast<std::size_t>(w);
  }
}

[[noreturn]] void child(const std::string& path, int fd) {
  std::string reason;
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    reason = fmt::format("cannot be opened: {}", why ? why : "unknown dlopen error");
  } else if (auto entry = reinterpret_cast<peat_backend_get_api_fn>(::dlsym(handle, PEAT_BACKEND_ENTRY_POINT))) {
    reason = validate_table(entry(PEAT_BACKEND_ABI_MAJOR), PEAT_BACKEND_ABI_MAJOR);
  } else {
    reason = fmt::format("does not export {}", PEAT_BACKEND_ENTRY_POINT);
  }
  write_all(fd, "R" + reason);  // "R" marks a report, so "" is distinguishable from silence
  ::_exit(0);                   // no exit handlers of the host in the child
}

}  // namespace

std::string probe_plugin(const std::string& path) {
  if (const char* env = std::getenv("PEAT_BACKEND_PROBE"); env != nullptr && std::strcmp(env, "0") == 0) return {};
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};  // cannot probe: load as before
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {};
  }
  if (pid == 0) {
    ::close(fds[0]);
    child(path, fds[1]);
  }
  ::close(fds[1]);
  std::string report;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kProbeSeconds);
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      timed_out = r == 0;
      break;
    }
    char buf[512];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child is gone
    report.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return fmt::format("did not finish loading within {} s in a probe process (killed)", kProbeSeconds);
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return fmt::format("crashed while loading in a probe process (signal {}, SIG{}); not loaded into this process",
                       WTERMSIG(status), name ? name : "?");
  }
  if (report.empty() || report[0] != 'R')
    return fmt::format("ended its probe process (exit status {}) while loading, before its table could be checked",
                       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return report.substr(1);
}

}  // namespace peat::impl::backend
