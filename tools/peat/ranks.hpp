// The processes one `peat` command runs on: the ranks of an MPI job when the
// tool is built with MPI (PEAT_WITH_MPI) and started by mpirun or srun, one
// process otherwise. Rank 0 collects byte strings from the others; nothing
// waits forever: a rank that says nothing (no heartbeat, no result) for the
// timeout is reported lost, so the others finish and rank 0 reports a
// partial result.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace peat::cli {

class Ranks {
 public:
  static Ranks& instance();

  // Called once by main before the command line is parsed: joins the MPI job
  // when the process was started by an MPI launcher.
  void init(int* argc, char*** argv);
  // Called by main with the exit code: leaves the MPI job. When a peer was
  // lost it flushes and ends the process at once (finalising would wait for
  // the lost rank), else it returns `code`.
  int finish(int code);

  int rank() const noexcept { return rank_; }
  int world() const noexcept { return world_; }
  bool root() const noexcept { return rank_ == 0; }

  // One rank's contribution to a collection at rank 0.
  struct Part {
    bool received = false;
    std::vector<std::byte> bytes;
    std::string why;  // when not received: what happened to the rank
  };
  // Rank 0: the parts of ranks 0..world-1 (its own `mine` at index 0), waiting
  // for each other rank while it keeps sending heartbeats or data, and giving
  // up on one silent for `timeout_s`. Other ranks: send `mine` to rank 0 (at
  // most `timeout_s` for it to be taken) and return an empty vector.
  std::vector<Part> gather(std::vector<std::byte> mine, double timeout_s);
  // Tells the ranks waiting for this one that it is alive (rank 0 -> all,
  // others -> rank 0; sent at most once a second).
  void heartbeat();
  // Not rank 0: tells rank 0 this rank failed (`message`), so that it stops
  // waiting for it. Does nothing on rank 0 or without MPI.
  void report_failure(const std::string& message);

 private:
  int rank_ = 0, world_ = 1;
  bool mpi_ = false;
  bool lost_peer_ = false;
  double timeout_s_ = 120;  // the last collection's timeout, also used when leaving
  std::vector<std::string> gone_;  // per rank: why it is out of the job ("" while it is in)
};

}  // namespace peat::cli
