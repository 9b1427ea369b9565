#include "tools/peat/rank_set.hpp"

#include <algorithm>
#include <map>
#include <regex>

namespace peat::cli {

RankTrace rank_trace_of(std::string path, peat::trace_reader reader) {
  RankTrace t{.path = std::move(path), .reader = std::move(reader)};
  const peat_trace_run_info_t info = checked(t.path, [&] { return t.reader.run_info(); });
  t.rank = info.rank;
  t.world = info.world_size;
  for (uint64_t i = 0; i < info.n_tags; ++i) {
    const auto [key, value] = checked(t.path, [&] { return t.reader.tag(i); });
    if (std::string(key) == "run_id") t.run_id = value;
  }
  return t;
}

std::string rank_file(const std::string& path, int rank) {
  static const std::regex rule(R"(^(.*)\.rank[0-9]+\.peat$)");
  std::smatch m;
  if (!std::regex_match(path, m, rule)) return {};
  return m[1].str() + ".rank" + std::to_string(rank) + ".peat";
}

namespace {

// Opens one rank's trace; a missing rank file says which rank it was.
peat::trace_reader open_rank_trace(const std::string& path) {
  try {
    return open_trace(path);
  } catch (const CliError& e) {
    static const std::regex rule(R"(^.*\.rank([0-9]+)\.peat$)");
    std::smatch m;
    if (!std::regex_match(path, m, rule)) throw;
    throw CliError(e.code(), "rank " + m[1].str() + ": " + e.what());
  }
}

}  // namespace

std::vector<RankTrace> open_rank_set(const std::vector<std::string>& paths, bool by_position) {
  std::vector<RankTrace> set;
  for (const std::string& p : paths) set.push_back(rank_trace_of(p, open_rank_trace(p)));
  if (set.empty()) throw CliError(kUsage, "no rank traces given");
  const bool single_process_headers =
      std::all_of(set.begin(), set.end(), [](const RankTrace& t) { return t.rank == 0 && t.world == 1; });
  if (by_position && single_process_headers && set.size() > 1) {
    for (std::size_t i = 0; i < set.size(); ++i) {
      set[i].rank = static_cast<int>(i);
      set[i].world = static_cast<int>(set.size());
    }
  }
  const RankTrace& first = set.front();
  for (const RankTrace& t : set) {
    if (t.run_id != first.run_id)
      throw CliError(kBadInput, "traces of different runs: rank " + std::to_string(t.rank) + " (" + t.path +
                                    ") has run id '" + t.run_id + "', rank " + std::to_string(first.rank) + " (" +
                                    first.path + ") has '" + first.run_id + "'");
    if (t.world != first.world)
      throw CliError(kBadInput, "world sizes disagree: rank " + std::to_string(t.rank) + " (" + t.path +
                                    ") says " + std::to_string(t.world) + " ranks, rank " +
                                    std::to_string(first.rank) + " (" + first.path + ") says " +
                                    std::to_string(first.world));
    if (t.rank < 0 || t.rank >= t.world)
      throw CliError(kBadInput, t.path + ": rank " + std::to_string(t.rank) + " is outside the world of " +
                                    std::to_string(t.world));
  }
  std::map<int, const RankTrace*> by_rank;
  for (const RankTrace& t : set) {
    auto [it, inserted] = by_rank.emplace(t.rank, &t);
    if (!inserted)
      throw CliError(kBadInput, "rank " + std::to_string(t.rank) + " is given twice: " + it->second->path + " and " +
                                    t.path);
  }
  for (int r = 0; r < first.world; ++r) {
    if (by_rank.count(r)) continue;
    const std::string expected = rank_file(first.path, r);
    throw CliError(kBadInput, "rank " + std::to_string(r) + " of " + std::to_string(first.world) +
                                  " is missing (run '" + first.run_id + "')" +
                                  (expected.empty() ? std::string() : ": expected " + expected));
  }
  std::sort(set.begin(), set.end(), [](const RankTrace& a, const RankTrace& b) { return a.rank < b.rank; });
  return set;
}

}  // namespace peat::cli
