// Moving a share's playback results between processes (peat_playback_export /
// peat_playback_import) and merging them. The byte string is host-endian and
// carries the signatures as the POD peat_signature_t, so it is meant for the
// processes of one build (MPI ranks, a batch array), not for storage. The
// importer re-reads every record's metadata (op, layer, step, call, phase)
// from its own reader and takes only the computed parts from the bytes, so a
// part cannot relabel a record; every size is checked before use.
//
// Merging rebuilds the summary and the groups from all results in record
// order, the order an unpartitioned run collects them in; signatures merge
// exactly (exact sums), so the merged playback equals the unpartitioned one
// byte for byte.
#include "lib/playback/playback.hpp"

#include "lib/analyzer/analyze.hpp"
#include "lib/core/arguments.hpp"
#include "lib/core/error.hpp"
#include "lib/trace/reader.hpp"
#include "trace/trace_generated.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace peat::impl::playback {

namespace {

constexpr char kMagic[8] = {'P', 'E', 'A', 'T', 'P', 'B', 'X', '1'};
constexpr uint32_t kVersion = 1;

class Writer {
 public:
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    bytes.insert(bytes.end(), p, p + s.size());
  }
  std::vector<std::byte> bytes;
};

class Cursor {
 public:
  Cursor(const std::byte* data, std::size_t size) : data_(data), size_(size) {}
  template <typename T>
  T get(const char* what) {
    T v;
    need(sizeof(T), what);
    std::memcpy(&v, data_ + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string get_string(const char* what) {
    const uint64_t n = get<uint64_t>(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(data_ + at_), static_cast<std::size_t>(n));
    at_ += static_cast<std::size_t>(n);
    return s;
  }
  // A count of items of at least `min_item` bytes each: bounded by what is left.
  uint64_t get_count(const char* what, std::size_t min_item) {
    const uint64_t n = get<uint64_t>(what);
    if (min_item > 0 && n > (size_ - at_) / min_item)
      fail(PEAT_STATUS_CORRUPT_DATA, "playback import: {} {} does not fit in the {} bytes left", what, n, size_ - at_);
    return n;
  }
  bool done() const noexcept { return at_ == size_; }
  std::size_t at() const noexcept { return at_; }

 private:
  void need(uint64_t n, const char* what) const {
    if (n > size_ - at_)
      fail(PEAT_STATUS_CORRUPT_DATA, "playback import: truncated at byte {} reading {} ({} bytes, {} left)", at_, what,
           n, size_ - at_);
  }
  const std::byte* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

// FNV-1a over the fields that decide results.
struct Hash {
  uint64_t h = 1469598103934665603ull;
  template <typename T>
  void add(const T& v) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    for (unsigned char c : b) h = (h ^ c) * 1099511628211ull;
  }
  void add(const std::string& s) {
    add<uint64_t>(s.size());
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  }
};

const char* str(const flatbuffers::String* s) { return s ? s->c_str() : ""; }

}  // namespace

uint64_t Playback::options_fingerprint() const {
  Hash h;
  h.add(filter_.phase);
  h.add(filter_.step_min);
  h.add(filter_.step_max);
  h.add(glob_);
  h.add(options_.run_twice);
  h.add(config_.rtol);
  h.add(config_.atol);
  h.add(config_.reduction_length);
  h.add(config_.unit_roundoff);
  h.add(config_.ratio_min_abs);
  h.add(config_.index_base);
  h.add(config_.spatial_rows);
  h.add(config_.spatial_cols);
  h.add(config_.tile_rows);
  h.add(config_.tile_cols);
  h.add(config_.map_mismatch);
  return h.h;
}

void Playback::export_to(void* buffer, std::size_t capacity, std::size_t* size) const {
  require_arg(size, "out_size");
  require_buffer(buffer, capacity, "buffer");  // before the export's own checks
  const std::vector<std::byte> bytes = export_results();
  copy_bytes_out(bytes.data(), bytes.size(), false, buffer, capacity, size, "the export");
}

std::vector<std::byte> Playback::export_results() const {
  if (!ran_) fail(PEAT_STATUS_BAD_STATE, "{}: nothing to export: the playback has not run", reader_.path());
  Writer w;
  for (char c : kMagic) w.put(c);
  w.put<uint32_t>(kVersion);
  w.put<uint32_t>(sizeof(peat_signature_t));
  w.put<uint64_t>(reader_.size());
  w.put<uint64_t>(options_fingerprint());
  w.put<uint32_t>(options_.partition_world);
  const uint32_t n_shares = static_cast<uint32_t>(std::count(merged_shares_.begin(), merged_shares_.end(), true));
  w.put<uint32_t>(n_shares);
  for (uint32_t r = 0; r < merged_shares_.size(); ++r)
    if (merged_shares_[r]) w.put<uint32_t>(r);
  w.put<uint64_t>(summary_.selected);
  w.put<uint8_t>(summary_.cancelled ? 1 : 0);
  const int compares = options_.run_twice ? kCompares : 1;
  w.put<uint64_t>(results_.size());
  for (const Result& r : results_) {
    w.put<uint64_t>(r.record);
    w.put<int32_t>(r.status);
    w.put<int32_t>(r.deterministic);
    w.put_string(r.message);
    w.put<uint64_t>(r.n_outputs);
    w.put<uint64_t>(r.elements);
    w.put<uint64_t>(r.bitwise_mismatches);
    w.put<uint64_t>(r.tolerance_failures);
    w.put<uint64_t>(r.signatures.size());
    for (const auto& sigs : r.signatures)
      for (int c = 0; c < compares; ++c) w.put(sigs[static_cast<std::size_t>(c)]);
    w.put<uint64_t>(r.verdicts.size());
    for (const auto& v : r.verdicts) {
      w.put<int32_t>(v.model);
      w.put<int32_t>(v.bit);
    }
  }
  return std::move(w.bytes);
}

void Playback::import_results(const std::byte* data, std::size_t size) {
  if (!ran_)
    fail(PEAT_STATUS_BAD_STATE, "{}: run this share's playback before importing other shares", reader_.path());
  Cursor c(data, size);
  char magic[8];
  for (char& m : magic) m = c.get<char>("magic");
  if (std::memcmp(magic, kMagic, sizeof magic) != 0)
    fail(PEAT_STATUS_CORRUPT_DATA, "playback import: not a playback export (bad magic)");
  const auto version = c.get<uint32_t>("version");
  if (version != kVersion)
    fail(PEAT_STATUS_VERSION_MISMATCH, "playback import: export version {}; this library reads {}", version, kVersion);
  const auto sig_size = c.get<uint32_t>("signature size");
  if (sig_size != sizeof(peat_signature_t))
    fail(PEAT_STATUS_VERSION_MISMATCH, "playback import: signatures of {} bytes; this library's are {} (another build)",
         sig_size, sizeof(peat_signature_t));
  const auto records = c.get<uint64_t>("record count");
  if (records != reader_.size())
    fail(PEAT_STATUS_INVALID_ARGUMENT, "playback import: the export is of a trace with {} records; '{}' has {}",
         records, reader_.path(), reader_.size());
  if (c.get<uint64_t>("options fingerprint") != options_fingerprint())
    fail(PEAT_STATUS_INVALID_ARGUMENT,
         "playback import: the export was made with another filter, config or run_twice than this playback");
  const auto world = c.get<uint32_t>("partition world");
  if (world != options_.partition_world)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "playback import: the export is of a partition into {} shares; this one has {}",
         world, options_.partition_world);
  const uint64_t n_shares = c.get<uint32_t>("share count");
  if (n_shares == 0 || n_shares > world)
    fail(PEAT_STATUS_CORRUPT_DATA, "playback import: {} shares named for a world of {}", n_shares, world);
  std::vector<bool> theirs(world, false);
  for (uint64_t i = 0; i < n_shares; ++i) {
    const auto r = c.get<uint32_t>("share rank");
    if (r >= world || theirs[r]) fail(PEAT_STATUS_CORRUPT_DATA, "playback import: share rank {} is invalid or repeated", r);
    if (merged_shares_[r])
      fail(PEAT_STATUS_INVALID_ARGUMENT, "playback import: share {} of {} is already merged into this playback", r,
           world);
    theirs[r] = true;
  }
  const auto selected = c.get<uint64_t>("selected");
  const bool cancelled = c.get<uint8_t>("cancelled") != 0;

  // Which share owns each selected record: a part may only hold its own.
  std::vector<int64_t> owner_of = record_owners();
  for (auto& o : owner_of)
    if (o >= 0 && !theirs[static_cast<std::size_t>(o)]) o = -1;

  const int compares = options_.run_twice ? kCompares : 1;
  const uint64_t n = c.get_count("result count", 48);
  std::vector<Result> incoming;
  incoming.reserve(static_cast<std::size_t>(n));
  for (uint64_t i = 0; i < n; ++i) {
    Result r;
    r.record = c.get<uint64_t>("record");
    if (r.record >= reader_.size() || owner_of[r.record] < 0)
      fail(PEAT_STATUS_CORRUPT_DATA, "playback import: result {} names record {}, which is not in the exporter's shares",
           i, r.record);
    owner_of[r.record] = -1;  // once
    r.status = c.get<int32_t>("status");
    r.deterministic = c.get<int32_t>("deterministic");
    r.message = c.get_string("message");
    r.n_outputs = c.get<uint64_t>("n_outputs");
    r.elements = c.get<uint64_t>("elements");
    r.bitwise_mismatches = c.get<uint64_t>("bitwise_mismatches");
    r.tolerance_failures = c.get<uint64_t>("tolerance_failures");
    const uint64_t n_sig = c.get_count("signature count", sizeof(peat_signature_t) * compares);
    if (n_sig != 0 && n_sig != r.n_outputs)
      fail(PEAT_STATUS_CORRUPT_DATA, "playback import: record {} has {} outputs but {} signatures", r.record,
           r.n_outputs, n_sig);
    r.signatures.assign(static_cast<std::size_t>(n_sig),
                        {analyzer::empty_signature(), analyzer::empty_signature(), analyzer::empty_signature()});
    for (auto& sigs : r.signatures)
      for (int k = 0; k < compares; ++k) sigs[static_cast<std::size_t>(k)] = c.get<peat_signature_t>("signature");
    const uint64_t n_verdicts = c.get_count("verdict count", 8);
    if (n_verdicts > n_sig)
      fail(PEAT_STATUS_CORRUPT_DATA, "playback import: record {} has {} verdicts for {} signatures", r.record,
           n_verdicts, n_sig);
    r.verdicts.resize(static_cast<std::size_t>(n_verdicts));
    for (auto& v : r.verdicts) {
      v.model = c.get<int32_t>("verdict model");
      v.bit = c.get<int32_t>("verdict bit");
    }
    // Labels come from this process's reader, never from the bytes.
    const auto* op = reader_.entry(r.record).record->body_as_OpInvocation();
    if (op == nullptr)
      fail(PEAT_STATUS_CORRUPT_DATA, "playback import: record {} of '{}' is not an op record", r.record, reader_.path());
    r.op = str(op->op());
    r.module_path = str(op->module_path());
    r.step = op->step();
    r.call_index = op->call_index();
    r.phase = op->phase();
    incoming.push_back(std::move(r));
  }
  if (!c.done())
    fail(PEAT_STATUS_CORRUPT_DATA, "playback import: {} bytes after the last result", size - c.at());

  // Commit (nothing above changed the playback).
  for (auto& r : incoming) results_.push_back(std::move(r));
  std::stable_sort(results_.begin(), results_.end(),
                   [](const Result& a, const Result& b) { return a.record < b.record; });
  for (uint32_t r = 0; r < world; ++r)
    if (theirs[r]) merged_shares_[r] = true;
  const uint64_t mine_selected = summary_.selected;
  const bool mine_cancelled = summary_.cancelled;
  regroup();
  summary_.selected = mine_selected + selected;
  summary_.cancelled = mine_cancelled || cancelled;
}

void Playback::regroup() {
  const Summary before = summary_;
  summary_ = Summary{};
  summary_.selected = before.selected;
  summary_.cancelled = before.cancelled;
  by_op_ = Grouping{};
  by_layer_ = Grouping{};
  for (const Result& r : results_) count(r);
}

}  // namespace peat::impl::playback
