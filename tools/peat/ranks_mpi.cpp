// Ranks over MPI. The job is joined only when an MPI launcher started the
// process (OpenMPI's mpirun, or a PMI/PMIx launcher such as srun): a plain
// `peat playback` stays a single process and never pays MPI's start-up.
//
// Rank 0 collects by polling (MPI_Iprobe) rather than blocking, so that a
// rank that died, or hangs, is noticed by its silence: every other rank sends
// a heartbeat at most once a second while it works (from the playback's
// progress callback), and a rank heard from neither by heartbeat nor by data
// for the timeout is lost. MPI's default handler would end the whole job when
// a rank dies; OpenMPI keeps the others running with `mpirun --enable-recovery`
// (docs/distributed.md). Messages: a heartbeat, a failure text, or a size
// followed by the data in chunks of at most 1 GiB (MPI counts are int).
#include "tools/peat/ranks.hpp"

#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace peat::cli {

namespace {

enum Tag : int { kHeartbeat = 101, kFailure = 102, kSize = 103, kData = 104, kFinish = 105 };
constexpr std::size_t kChunk = std::size_t{1} << 30;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

// Waits for `requests` to complete; false when `peer` (>= 0) sends no
// heartbeat for `timeout_s` meanwhile (peer -1: at most `timeout_s` in all).
// A large result is taken only when rank 0 has finished its own share, which
// may take long: its heartbeats say it is alive.
// Rank 0 saying it is leaving (it failed before taking the result) ends the
// wait at once.
bool wait_all(std::vector<MPI_Request>& requests, double timeout_s, int peer = -1) {
  auto heard = Clock::now();
  for (;;) {
    int done = 0;
    MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return true;
    if (peer >= 0) {
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(peer, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
      if (flag && (status.MPI_TAG == kHeartbeat || status.MPI_TAG == kFinish)) {
        int value = 0;
        MPI_Recv(&value, 1, MPI_INT, peer, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (status.MPI_TAG == kFinish) return false;
        heard = Clock::now();
        continue;
      }
    }
    if (seconds_since(heard) > timeout_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

Ranks& Ranks::instance() {
  static Ranks ranks;
  return ranks;
}

void Ranks::init(int* argc, char*** argv) {
  if (!launched_by_mpi()) return;
  MPI_Init(argc, argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_);
  mpi_ = true;
}

// Leaving: MPI_Finalize waits for every rank, a lost one too, so rank 0
// tells each rank still in the job whether a peer was lost; then all of them
// either finalise or leave at once. A rank waits for that word while rank 0
// keeps sending heartbeats (it may still be replaying its own share).
int Ranks::finish(int code) {
  if (!mpi_) return code;
  gone_.resize(static_cast<std::size_t>(world_));
  if (rank_ == 0) {
    static int lost = 0;
    lost = lost_peer_ ? 1 : 0;
    std::vector<MPI_Request> requests;
    for (int r = 1; r < world_; ++r) {
      if (!gone_[static_cast<std::size_t>(r)].empty()) continue;
      requests.emplace_back();
      MPI_Isend(&lost, 1, MPI_INT, r, kFinish, MPI_COMM_WORLD, &requests.back());
    }
    if (!wait_all(requests, timeout_s_)) lost_peer_ = true;
  } else if (!lost_peer_) {
    auto heard = Clock::now();
    for (;;) {
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
      if (flag) {
        heard = Clock::now();
        int value = 0;
        MPI_Recv(&value, 1, MPI_INT, 0, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (status.MPI_TAG == kFinish) {
          if (value != 0) lost_peer_ = true;
          break;
        }
        continue;
      }
      if (seconds_since(heard) > timeout_s_) {
        std::fprintf(stderr, "peat: rank %d: rank 0 sent nothing for %.0f s; leaving\n", rank_, timeout_s_);
        lost_peer_ = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  if (lost_peer_) {
    // MPI_Finalize would wait for the lost rank: the result is out, leave now.
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(code);
  }
  MPI_Finalize();
  return code;
}

void Ranks::heartbeat() {
  if (!mpi_ || world_ == 1) return;
  static Clock::time_point last{};
  static int beat = 0;
  if (last != Clock::time_point{} && seconds_since(last) < 1.0) return;
  last = Clock::now();
  ++beat;
  gone_.resize(static_cast<std::size_t>(world_));
  // Rank 0 beats to every rank still in (they wait for its word at the end),
  // the others to rank 0.
  for (int r = rank_ == 0 ? 1 : 0; r < (rank_ == 0 ? world_ : 1); ++r) {
    if (!gone_[static_cast<std::size_t>(r)].empty()) continue;
    MPI_Request request;
    MPI_Isend(&beat, 1, MPI_INT, r, kHeartbeat, MPI_COMM_WORLD, &request);
    MPI_Request_free(&request);  // small: sent eagerly; `beat` is static
  }
}

void Ranks::report_failure(const std::string& message) {
  if (!mpi_ || rank_ == 0) return;
  std::vector<MPI_Request> request(1);
  MPI_Isend(message.data(), static_cast<int>(std::min(message.size(), kChunk)), MPI_CHAR, 0, kFailure, MPI_COMM_WORLD,
            &request[0]);
  if (!wait_all(request, 10.0)) lost_peer_ = true;
}

std::vector<Ranks::Part> Ranks::gather(std::vector<std::byte> mine, double timeout_s) {
  timeout_s_ = timeout_s;
  if (!mpi_ || world_ == 1) {
    std::vector<Part> parts(1);
    parts[0].received = true;
    parts[0].bytes = std::move(mine);
    return parts;
  }
  if (rank_ != 0) {
    uint64_t size = mine.size();
    std::vector<MPI_Request> requests(1);
    MPI_Isend(&size, 1, MPI_UINT64_T, 0, kSize, MPI_COMM_WORLD, &requests[0]);
    for (std::size_t at = 0; at < mine.size(); at += kChunk) {
      requests.emplace_back();
      MPI_Isend(mine.data() + at, static_cast<int>(std::min(kChunk, mine.size() - at)), MPI_BYTE, 0, kData,
                MPI_COMM_WORLD, &requests.back());
    }
    if (!wait_all(requests, timeout_s, 0)) {
      lost_peer_ = true;
      std::fprintf(stderr, "peat: rank %d: rank 0 left, or went silent for %.0f s, before taking this rank's result\n",
                   rank_, timeout_s);
    }
    return {};
  }

  std::vector<Part> parts(static_cast<std::size_t>(world_));
  parts[0].received = true;
  parts[0].bytes = std::move(mine);
  std::vector<Clock::time_point> heard(parts.size(), Clock::now());
  std::vector<bool> pending(parts.size(), true);
  pending[0] = false;
  gone_.resize(parts.size());
  int left = world_ - 1;
  for (std::size_t r = 1; r < parts.size(); ++r)
    if (!gone_[r].empty()) {  // lost or failed in an earlier collection: not waited for again
      parts[r].why = gone_[r];
      pending[r] = false;
      --left;
    }
  while (left > 0) {
    bool progress = false;
    for (int r = 1; r < world_; ++r) {
      if (!pending[static_cast<std::size_t>(r)]) continue;
      Part& part = parts[static_cast<std::size_t>(r)];
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(r, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
      if (!flag) {
        if (seconds_since(heard[static_cast<std::size_t>(r)]) > timeout_s) {
          part.why = "rank " + std::to_string(r) + " sent nothing for " + std::to_string(static_cast<int>(timeout_s)) +
                     " s (died or hangs)";
          pending[static_cast<std::size_t>(r)] = false;
          lost_peer_ = true;
          --left;
        }
        continue;
      }
      progress = true;
      heard[static_cast<std::size_t>(r)] = Clock::now();
      if (status.MPI_TAG == kHeartbeat) {
        int beat = 0;
        MPI_Recv(&beat, 1, MPI_INT, r, kHeartbeat, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (status.MPI_TAG == kFailure) {
        int count = 0;
        MPI_Get_count(&status, MPI_CHAR, &count);
        std::string text(static_cast<std::size_t>(std::max(count, 0)), '\0');
        MPI_Recv(text.data(), count, MPI_CHAR, r, kFailure, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        part.why = "rank " + std::to_string(r) + " failed: " + text;
        pending[static_cast<std::size_t>(r)] = false;
        --left;
      } else if (status.MPI_TAG == kSize) {
        uint64_t size = 0;
        MPI_Recv(&size, 1, MPI_UINT64_T, r, kSize, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        part.bytes.resize(static_cast<std::size_t>(size));
        std::vector<MPI_Request> requests;
        for (std::size_t at = 0; at < part.bytes.size(); at += kChunk) {
          requests.emplace_back();
          MPI_Irecv(part.bytes.data() + at, static_cast<int>(std::min(kChunk, part.bytes.size() - at)), MPI_BYTE, r,
                    kData, MPI_COMM_WORLD, &requests.back());
        }
        if (wait_all(requests, timeout_s)) {
          part.received = true;
        } else {
          part.bytes.clear();
          part.why = "rank " + std::to_string(r) + " stopped while sending its result";
          lost_peer_ = true;
        }
        pending[static_cast<std::size_t>(r)] = false;
        --left;
      } else {
        // Not ours (cannot happen): drop it so that the probe moves on.
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        std::vector<char> sink(static_cast<std::size_t>(std::max(count, 0)));
        MPI_Recv(sink.data(), count, MPI_BYTE, r, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
    }
    if (!progress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    heartbeat();  // the ranks already done wait for rank 0's word
  }
  for (std::size_t r = 1; r < parts.size(); ++r)
    if (!parts[r].received) gone_[r] = parts[r].why;
  return parts;
}

}  // namespace peat::cli
