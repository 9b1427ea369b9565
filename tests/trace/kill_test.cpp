// Kill test: a child process records op invocations in a loop and is SIGKILLed
// at a random moment, 24 times. Every record the child had completed (flushed
// and acknowledged on its stdout) must be recovered intact, bit for bit, and
// nothing else may be recovered but whole records.
#include <peat/peat.h>

#include "kill_common.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

#include "expect.hpp"

namespace {


// Reads the acknowledgements available now (one read), waiting up to
// timeout_ms for the first; `acked` becomes the number of acknowledged records.
// Returns false at end of file.
bool drain(int fd, uint64_t& acked, int timeout_ms) {
  uint64_t buf[512];
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return true;
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n <= 0) return false;
  // 8-byte writes to a pipe are atomic; records are acknowledged in order
  const std::size_t count = static_cast<std::size_t>(n) / 8;
  if (count > 0) acked = buf[count - 1] + 1;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CHILD WORKDIR\n", argv[0]);
    return 2;
  }
  const std::string child = argv[1];
  const std::filesystem::path work = argv[2];
  std::filesystem::remove_all(work);
  std::filesystem::create_directories(work);
  std::mt19937 rng(20260);
  constexpr int kTrials = 24;
  uint64_t total_recovered = 0;
  int mid_record_tails = 0;
  uint64_t references = 0, deltas = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    const std::string path = (work / ("t" + std::to_string(trial) + ".peat")).string();
    int fds[2];
    if (::pipe(fds) != 0) return 3;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    const bool zstd = trial % 2 == 1;  // the codec with XOR deltas
    char zstd_arg[] = "zstd";
    char* const args[] = {const_cast<char*>(child.c_str()), const_cast<char*>(path.c_str()), zstd ? zstd_arg : nullptr,
                          nullptr};
    pid_t pid = 0;
    if (posix_spawn(&pid, child.c_str(), &actions, nullptr, args, environ) != 0) return 4;
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);

    uint64_t acked = 0;
    // Most trials kill after recording started, at a random moment; a few kill
    // at once (possibly before the header is complete).
    const bool early = trial % 8 == 0;
    if (!early) drain(fds[0], acked, 5000);  // wait for the first record
    const auto delay = std::chrono::microseconds(std::uniform_int_distribution<int>(0, early ? 3000 : 120000)(rng));
    const auto until = std::chrono::steady_clock::now() + delay;
    while (std::chrono::steady_clock::now() < until) drain(fds[0], acked, 1);
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    while (drain(fds[0], acked, 0)) {  // acknowledgements written before the kill
      pollfd p{fds[0], POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) break;
    }
    ::close(fds[0]);
    EXPECT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "trial %d: child ended otherwise (status %d)", trial,
           status);

    peat_trace_reader_t* reader = nullptr;
    peat_trace_recovery_t rec{};
    rec.struct_size = sizeof rec;
    const peat_status_t s = peat_trace_recover(path.c_str(), nullptr, &reader, &rec);
    if (s != PEAT_STATUS_OK) {
      // only acceptable when nothing was acknowledged (killed before or while writing the header)
      EXPECT(acked == 0, "trial %d: recover failed with %llu records acknowledged: %s", trial,
             static_cast<unsigned long long>(acked), peat_last_error_message());
      continue;
    }
    EXPECT(rec.complete == 0, "trial %d: a killed writer cannot have written the footer", trial);
    EXPECT(rec.records >= acked, "trial %d: %llu records recovered but %llu were acknowledged", trial,
           static_cast<unsigned long long>(rec.records), static_cast<unsigned long long>(acked));
    EXPECT(rec.valid_bytes <= rec.file_bytes, "trial %d: valid bytes beyond the file", trial);
    if (rec.valid_bytes < rec.file_bytes) ++mid_record_tails;
    total_recovered += rec.records;
    for (uint64_t i = 0; i < rec.records; ++i) {
      peat_trace_record_info_t info{};
      info.struct_size = sizeof info;
      if (peat_trace_record_info(reader, i, &info) != PEAT_STATUS_OK) {
        EXPECT(false, "trial %d: record %llu: %s", trial, static_cast<unsigned long long>(i), peat_last_error_message());
        break;
      }
      EXPECT(info.kind == PEAT_TRACE_KIND_OP && info.call_index == i && info.step == static_cast<int64_t>(i / 10),
             "trial %d: record %llu has the wrong metadata", trial, static_cast<unsigned long long>(i));
      const std::vector<float> want = peat_kill::tensor(i);
      std::vector<float> got(want.size());
      const peat_status_t ls =
          peat_trace_load_tensor(reader, i, PEAT_TRACE_SLOT_INPUT, 0, got.data(), got.size() * sizeof(float));
      EXPECT(ls == PEAT_STATUS_OK && std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0,
             "trial %d: record %llu content differs (%s)", trial, static_cast<unsigned long long>(i),
             peat_last_error_message());
      // inputs[1] repeats record i - 1's tensor: a reference across records
      // (within record 0), followed after the kill like any stored tensor.
      const uint64_t j = i == 0 ? 0 : i - 1;
      const std::vector<float> again = peat_kill::tensor(j);
      std::vector<float> got_again(again.size());
      const peat_status_t rs = peat_trace_load_tensor(reader, i, PEAT_TRACE_SLOT_INPUT, 1, got_again.data(),
                                                      got_again.size() * sizeof(float));
      EXPECT(rs == PEAT_STATUS_OK && std::memcmp(got_again.data(), again.data(), again.size() * sizeof(float)) == 0,
             "trial %d: record %llu: inputs[1] differs from record %llu's tensor (%s)", trial,
             static_cast<unsigned long long>(i), static_cast<unsigned long long>(j), peat_last_error_message());
      peat_trace_tensor_info_t ti{};
      ti.struct_size = sizeof ti;
      const bool big = peat_kill::elements(j) * 4 >= peat_kill::kReferenceMinBytes;
      EXPECT(peat_trace_tensor_info(reader, i, PEAT_TRACE_SLOT_INPUT, 1, &ti) == PEAT_STATUS_OK &&
                 ti.is_reference == (big ? 1 : 0) && (!big || ti.ref_seq == j),
             "trial %d: record %llu: inputs[1] is%s a reference (expected %d, to %llu)", trial,
             static_cast<unsigned long long>(i), ti.is_reference ? "" : " not", big ? 1 : 0,
             static_cast<unsigned long long>(j));
      if (big) ++references;
      // inputs[2]: version i of a weight; with zstd a delta against the
      // version stored whole before it, decoded through that base after the kill.
      const std::vector<float> w = peat_kill::weight(i);
      std::vector<float> got_w(w.size());
      const peat_status_t ws = peat_trace_load_tensor(reader, i, PEAT_TRACE_SLOT_INPUT, 2, got_w.data(),
                                                      got_w.size() * sizeof(float));
      EXPECT(ws == PEAT_STATUS_OK && std::memcmp(got_w.data(), w.data(), w.size() * sizeof(float)) == 0,
             "trial %d: record %llu: inputs[2] differs from weight version %llu (%s)", trial,
             static_cast<unsigned long long>(i), static_cast<unsigned long long>(i), peat_last_error_message());
      EXPECT(peat_trace_tensor_info(reader, i, PEAT_TRACE_SLOT_INPUT, 2, &ti) == PEAT_STATUS_OK &&
                 (zstd || ti.codec == PEAT_TRACE_CODEC_RAW),
             "trial %d: record %llu: inputs[2] has codec %d", trial, static_cast<unsigned long long>(i), ti.codec);
      if (ti.codec == PEAT_TRACE_CODEC_XOR_DELTA_SHUFFLE_ZSTD) ++deltas;
    }
    peat_trace_close(reader);
  }
  std::printf("%d trials, %llu records recovered in all (%llu references, %llu deltas followed), %d files ended inside "
              "a record; %d expect_failures\n",
              kTrials, static_cast<unsigned long long>(total_recovered), static_cast<unsigned long long>(references),
              static_cast<unsigned long long>(deltas), mid_record_tails, expect_failures);
  EXPECT(references > 0, "no reference was recovered in %d trials", kTrials);
  EXPECT(deltas > 0, "no XOR delta was recovered in %d trials", kTrials);
  std::filesystem::remove_all(work);
  return expect_failures == 0 ? 0 : 1;
}
