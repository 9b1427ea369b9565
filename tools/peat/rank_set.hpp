// The traces of one distributed run, one per rank ("<prefix>.rank<r>.peat",
// docs/distributed.md): each header names its rank and world size, and its
// "run_id" tag the run. open_rank_set refuses, naming the rank and the file,
// traces of different runs mixed, world sizes that disagree, a rank given
// twice and a missing rank (with the file the naming rule expects).
#pragma once

#include "tools/peat/common.hpp"

#include <string>
#include <vector>

namespace peat::cli {

struct RankTrace {
  int rank = 0;
  int world = 1;
  std::string path, run_id;  // run_id "" when the trace has no "run_id" tag
  peat::trace_reader reader;
};

// The header's rank, world size and run id of an open trace.
RankTrace rank_trace_of(std::string path, peat::trace_reader reader);

// Opens and checks `paths`; the result is in rank order. With `by_position`
// true, traces whose headers do not form a rank set (every one rank 0 of 1,
// as a single-process recorder writes) take their rank from their position.
// Throws CliError(kBadInput).
std::vector<RankTrace> open_rank_set(const std::vector<std::string>& paths, bool by_position = false);

// The file the naming rule gives rank `rank` of the run that wrote `path`
// ("run.rank3.peat" -> "run.rank<rank>.peat"); "" when `path` does not follow it.
std::string rank_file(const std::string& path, int rank);

}  // namespace peat::cli
