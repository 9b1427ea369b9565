// peat compare --ranks TRACE...: the rank traces of one data-parallel run.
// Every rank must hold the same parameters after each step (checkpoint
// records) and the same all-reduced gradients (the outputs of the collective
// op records, e.g. peat.torch's "ddp/c10d::allreduce"). Tensors are compared
// by their recorded XXH3 checksums, in the order rank 0 recorded them; the
// first step, op or checkpoint tensor, and rank where they diverge is named
// (the rank outside the majority; with no majority, the ranks not agreeing
// with rank 0), with the signature of its difference.
#pragma once

#include <string>
#include <vector>

namespace peat::cli {

struct CompareRanksOptions {
  std::vector<std::string> traces;
  std::string collective_glob = "*allreduce*";  // op records whose outputs must agree
  bool json = false;
};

int run_compare_ranks(const CompareRanksOptions& options);

}  // namespace peat::cli
