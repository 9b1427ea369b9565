// The {rank, world} partition of a playback's selected records
// (peat_playback_options_t.partition_*). Shares are contiguous runs of the
// selected records in record order, cut where the running sum of decoded
// tensor bytes (the footer index's raw_total, plus one per record so that
// tensor-less records count) crosses k/world of the total: work is roughly
// proportional to the bytes a record loads and compares, a contiguous run
// reads the file forward, and the cut depends only on the index, so every
// process computes the same one without talking to the others.
#include "lib/playback/playback.hpp"

#include "lib/core/error.hpp"
#include "lib/trace/reader.hpp"

namespace peat::impl::playback {

namespace {

// before * world can exceed 64 bits (a 2^50-byte trace set over 2^16 shares).
__extension__ typedef unsigned __int128 u128;

std::vector<uint64_t> matching(const trace::Reader& reader, const peat_trace_filter_t& filter) {
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < reader.size(); ++i)
    if (reader.matches(i, filter)) out.push_back(i);
  return out;
}

// Owner of each record of `selected` among `world` shares.
std::vector<uint32_t> owners(const trace::Reader& reader, const std::vector<uint64_t>& selected, uint32_t world) {
  std::vector<uint64_t> weight(selected.size());
  u128 total = 0;
  for (std::size_t i = 0; i < selected.size(); ++i) {
    weight[i] = reader.entry(selected[i]).raw_total + 1;
    total += weight[i];
  }
  std::vector<uint32_t> out(selected.size());
  u128 before = 0;
  for (std::size_t i = 0; i < selected.size(); ++i) {
    // The share whose byte range holds this record's first byte.
    out[i] = static_cast<uint32_t>(before * world / total);
    before += weight[i];
  }
  return out;
}

}  // namespace

std::vector<int64_t> Playback::record_owners() const {
  const std::vector<uint64_t> all = matching(reader_, filter_);
  const std::vector<uint32_t> owner = owners(reader_, all, options_.partition_world);
  std::vector<int64_t> out(reader_.size(), -1);
  for (std::size_t i = 0; i < all.size(); ++i) out[all[i]] = owner[i];
  return out;
}

std::vector<uint64_t> Playback::selected_records() const {
  std::vector<uint64_t> all = matching(reader_, filter_);
  if (options_.partition_world == 1) return all;
  const std::vector<uint32_t> owner = owners(reader_, all, options_.partition_world);
  std::vector<uint64_t> mine;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (owner[i] == options_.partition_rank) mine.push_back(all[i]);
  return mine;
}

Playback::Share Playback::share(uint32_t rank) const {
  if (rank >= options_.partition_world)
    fail(PEAT_STATUS_NOT_FOUND, "rank {} has no share: partition_world is {}", rank, options_.partition_world);
  const std::vector<uint64_t> all = matching(reader_, filter_);
  const std::vector<uint32_t> owner = owners(reader_, all, options_.partition_world);
  Share s;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (owner[i] != rank) continue;
    if (s.records == 0) s.first = all[i];
    s.end = all[i] + 1;
    ++s.records;
  }
  return s;
}

}  // namespace peat::impl::playback
