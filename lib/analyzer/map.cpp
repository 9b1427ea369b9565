#include "lib/analyzer/map.hpp"

#include "lib/core/error.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

namespace peat::impl::analyzer {
namespace {

// Library-owned buffers of a map (peat_spatial_map_t::owned).
struct OwnedBuffers {
  std::vector<uint64_t> rows, cols, tiles;
};

// Provides one buffer of n entries: library-owned when the pointer is NULL or
// already ours, else the caller's (capacity-checked).
void provide(uint64_t*& pointer, std::size_t& capacity, std::vector<uint64_t>* owned_vec, OwnedBuffers*& owned,
             peat_spatial_map_t& map, std::vector<uint64_t> OwnedBuffers::*member, int64_t n, const char* name) {
  const auto needed = static_cast<std::size_t>(n);
  const bool ours = owned != nullptr && owned_vec != nullptr && pointer != nullptr && pointer == owned_vec->data();
  if (pointer == nullptr || ours) {
    if (owned == nullptr) {
      owned = new OwnedBuffers();
      map.owned = owned;
    }
    auto& vec = owned->*member;
    vec.assign(std::max<std::size_t>(needed, 1), 0);
    pointer = vec.data();
    capacity = vec.size();
    return;
  }
  if (capacity < needed)
    fail(PEAT_STATUS_BUFFER_TOO_SMALL, "map.{}: capacity {} is smaller than the {} entries needed", name, capacity,
         needed);
  std::fill_n(pointer, needed, uint64_t{0});
}

struct Span {
  const char* name;
  const std::byte* begin;
  std::size_t bytes;
};

}  // namespace

void check_map_size(const peat_spatial_map_t& map, const char* what) {
  if (map.struct_size != sizeof(peat_spatial_map_t))
    fail(PEAT_STATUS_VERSION_MISMATCH, "{}: struct_size {} is not {} (call peat_spatial_map_init)", what,
         map.struct_size, sizeof(peat_spatial_map_t));
}

MapTarget map_target(const peat_spatial_map_t& map) noexcept {
  MapTarget t;
  t.rows = map.row_counts;
  t.cols = map.col_counts;
  t.tiles = map.tile_counts;
  t.n_cols = map.cols > 0 ? map.cols : 1;
  t.tile_rows = map.tile_rows > 0 ? map.tile_rows : 1;
  t.tile_cols = map.tile_cols > 0 ? map.tile_cols : 1;
  t.tile_grid_cols = map.tile_grid_cols > 0 ? map.tile_grid_cols : 1;
  return t;
}

void map_partial_begin(MapPartial& part, int64_t begin, int64_t end) noexcept {
  part = MapPartial{};
  part.begin = begin;
  part.end = end;
}

void map_partial_end(MapPartial& part) noexcept {
  if (part.count == 0) return;
  if (!part.first_run_closed) part.first_run_len = part.run_len;
  part.first_run_closed = true;
  part.leading = part.first == part.begin ? part.first_run_len : 0;
  part.trailing = part.last == part.end - 1 ? part.run_len : 0;
}

void map_partial_merge(MapPartial& a, const MapPartial& b) noexcept {
  if (b.begin == b.end && b.count == 0) return;
  if (a.begin == a.end && a.count == 0) {
    a = b;
    return;
  }
  const int64_t a_len = a.end - a.begin, b_len = b.end - b.begin;
  for (int i = 0; i < PEAT_SPATIAL_LANES_32; ++i) a.lane32[i] += b.lane32[i];
  for (int i = 0; i < PEAT_SPATIAL_LANES_64; ++i) a.lane64[i] += b.lane64[i];
  // Longest run: a's, the run joining a's tail to b's head, b's (ties: lowest start).
  int64_t longest = a.longest, start = a.longest_start;
  if (a.trailing > 0 && b.leading > 0) {
    const int64_t joined = a.trailing + b.leading;
    if (joined > longest) {
      longest = joined;
      start = a.end - a.trailing;
    }
  }
  if (b.longest > longest) {
    longest = b.longest;
    start = b.longest_start;
  }
  const int64_t leading = (a.leading == a_len) ? a_len + b.leading : a.leading;
  const int64_t trailing = (b.trailing == b_len) ? b_len + a.trailing : b.trailing;
  a.first = a.count > 0 ? a.first : b.first;
  a.last = b.count > 0 ? b.last : a.last;
  a.count += b.count;
  a.longest = longest;
  a.longest_start = start;
  a.leading = leading;
  a.trailing = trailing;
  a.end = b.end;
}

void map_partial_store(const MapPartial& part, peat_spatial_map_t& map) noexcept {
  std::memcpy(map.lane32_counts, part.lane32, sizeof(part.lane32));
  std::memcpy(map.lane64_counts, part.lane64, sizeof(part.lane64));
  map.mismatch_count = part.count;
  map.first_mismatch = part.first;
  map.last_mismatch = part.last;
  map.longest_run = part.longest;
  map.longest_run_start = part.longest_start;
  map.covered_begin = part.begin;
  map.covered_end = part.end;
  map.leading_run = part.leading;
  map.trailing_run = part.trailing;
}

MapPartial map_partial_load(const peat_spatial_map_t& map) noexcept {
  MapPartial part;
  std::memcpy(part.lane32, map.lane32_counts, sizeof(part.lane32));
  std::memcpy(part.lane64, map.lane64_counts, sizeof(part.lane64));
  part.count = map.mismatch_count;
  part.first = map.first_mismatch;
  part.last = map.last_mismatch;
  part.longest = map.longest_run;
  part.longest_start = map.longest_run_start;
  part.begin = map.covered_begin;
  part.end = map.covered_end;
  part.leading = map.leading_run;
  part.trailing = map.trailing_run;
  part.first_run_closed = true;
  return part;
}

void prepare_map(peat_spatial_map_t& map, const ResolvedConfig& cfg, const void* avoid, std::size_t avoid_size) {
  check_map_size(map, "map");
  auto* owned = static_cast<OwnedBuffers*>(map.owned);
  const int64_t tiles = cfg.tile_grid_rows * cfg.tile_grid_cols;
  // Check caller buffers for overlap before writing anything.
  std::vector<Span> spans;
  spans.push_back({"map", reinterpret_cast<const std::byte*>(&map), sizeof(map)});
  if (avoid != nullptr) spans.push_back({"the signature", static_cast<const std::byte*>(avoid), avoid_size});
  auto add_caller = [&](const uint64_t* p, int64_t n, const std::vector<uint64_t>* vec, const char* name) {
    const bool ours = owned != nullptr && p != nullptr && p == vec->data();
    if (p != nullptr && !ours && n > 0)
      spans.push_back({name, reinterpret_cast<const std::byte*>(p), static_cast<std::size_t>(n) * sizeof(uint64_t)});
  };
  add_caller(map.row_counts, cfg.rows, owned ? &owned->rows : nullptr, "map.row_counts");
  add_caller(map.col_counts, cfg.cols, owned ? &owned->cols : nullptr, "map.col_counts");
  add_caller(map.tile_counts, tiles, owned ? &owned->tiles : nullptr, "map.tile_counts");
  for (std::size_t i = 0; i < spans.size(); ++i)
    for (std::size_t j = i + 1; j < spans.size(); ++j) {
      const Span& a = spans[i];
      const Span& b = spans[j];
      if (a.begin < b.begin + b.bytes && b.begin < a.begin + a.bytes)
        fail(PEAT_STATUS_INVALID_ARGUMENT, "{} overlaps {}", b.name, a.name);
    }
  provide(map.row_counts, map.row_capacity, owned ? &owned->rows : nullptr, owned, map, &OwnedBuffers::rows, cfg.rows,
          "row_counts");
  provide(map.col_counts, map.col_capacity, owned ? &owned->cols : nullptr, owned, map, &OwnedBuffers::cols, cfg.cols,
          "col_counts");
  provide(map.tile_counts, map.tile_capacity, owned ? &owned->tiles : nullptr, owned, map, &OwnedBuffers::tiles, tiles,
          "tile_counts");
  map.rows = cfg.rows;
  map.cols = cfg.cols;
  map.tile_rows = cfg.tile_rows;
  map.tile_cols = cfg.tile_cols;
  map.tile_grid_rows = cfg.tile_grid_rows;
  map.tile_grid_cols = cfg.tile_grid_cols;
  MapPartial empty;
  map_partial_begin(empty, cfg.index_base, cfg.index_base);
  map_partial_store(empty, map);
}

void check_map_overlap(const peat_spatial_map_t& map, const void* avoid, std::size_t avoid_size) {
  std::vector<Span> spans;
  spans.push_back({"the map", reinterpret_cast<const std::byte*>(&map), sizeof(map)});
  if (avoid != nullptr) spans.push_back({"the signature", static_cast<const std::byte*>(avoid), avoid_size});
  auto add = [&](const uint64_t* p, int64_t n, const char* name) {
    if (p != nullptr && n > 0)
      spans.push_back({name, reinterpret_cast<const std::byte*>(p), static_cast<std::size_t>(n) * sizeof(uint64_t)});
  };
  add(map.row_counts, map.rows, "map.row_counts");
  add(map.col_counts, map.cols, "map.col_counts");
  add(map.tile_counts, map.tile_grid_rows * map.tile_grid_cols, "map.tile_counts");
  for (std::size_t i = 0; i < spans.size(); ++i)
    for (std::size_t j = i + 1; j < spans.size(); ++j)
      if (spans[i].begin < spans[j].begin + spans[j].bytes && spans[j].begin < spans[i].begin + spans[i].bytes)
        fail(PEAT_STATUS_INVALID_ARGUMENT, "{} overlaps {}", spans[j].name, spans[i].name);
}

void release_map(peat_spatial_map_t& map) noexcept {
  auto* owned = static_cast<OwnedBuffers*>(map.owned);
  if (owned == nullptr) return;
  if (map.row_counts == owned->rows.data()) { map.row_counts = nullptr; map.row_capacity = 0; }
  if (map.col_counts == owned->cols.data()) { map.col_counts = nullptr; map.col_capacity = 0; }
  if (map.tile_counts == owned->tiles.data()) { map.tile_counts = nullptr; map.tile_capacity = 0; }
  delete owned;
  map.owned = nullptr;
}

void merge_map(peat_spatial_map_t& into, const peat_spatial_map_t& from) {
  if (&into == &from) fail(PEAT_STATUS_INVALID_ARGUMENT, "inout_dst and src are the same map");
  check_map_size(into, "inout_dst");
  check_map_size(from, "src");
  if (from.rows == 0 && from.cols == 0) return;  // src never built: identity
  const int64_t tiles = from.tile_grid_rows * from.tile_grid_cols;
  if (from.row_counts == nullptr || from.col_counts == nullptr || from.tile_counts == nullptr)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "src: a count buffer is NULL");
  if (into.rows == 0 && into.cols == 0) {
    ResolvedConfig cfg;
    cfg.rows = from.rows;
    cfg.cols = from.cols;
    cfg.tile_rows = from.tile_rows;
    cfg.tile_cols = from.tile_cols;
    cfg.tile_grid_rows = from.tile_grid_rows;
    cfg.tile_grid_cols = from.tile_grid_cols;
    cfg.index_base = from.covered_begin;
    prepare_map(into, cfg, &from, sizeof(from));
  } else if (into.rows != from.rows || into.cols != from.cols || into.tile_rows != from.tile_rows ||
             into.tile_cols != from.tile_cols) {
    fail(PEAT_STATUS_INVALID_ARGUMENT, "maps of different geometry ({}x{} tiles {}x{} vs {}x{} tiles {}x{})",
         into.rows, into.cols, into.tile_rows, into.tile_cols, from.rows, from.cols, from.tile_rows, from.tile_cols);
  }
  MapPartial a = map_partial_load(into), b = map_partial_load(from);
  const bool a_empty = a.begin == a.end, b_empty = b.begin == b.end;
  MapPartial merged;
  if (a_empty) {
    merged = b;
  } else if (b_empty) {
    merged = a;
  } else if (a.end == b.begin) {
    merged = a;
    map_partial_merge(merged, b);
  } else if (b.end == a.begin) {
    merged = b;
    map_partial_merge(merged, a);
  } else {
    fail(PEAT_STATUS_INVALID_ARGUMENT, "maps cover [{}, {}) and [{}, {}), which do not touch", a.begin, a.end,
         b.begin, b.end);
  }
  if (into.row_counts == from.row_counts || into.col_counts == from.col_counts || into.tile_counts == from.tile_counts)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "inout_dst and src share a count buffer");
  for (int64_t i = 0; i < into.rows; ++i) into.row_counts[i] += from.row_counts[i];
  for (int64_t i = 0; i < into.cols; ++i) into.col_counts[i] += from.col_counts[i];
  for (int64_t i = 0; i < tiles; ++i) into.tile_counts[i] += from.tile_counts[i];
  map_partial_store(merged, into);
}

}  // namespace peat::impl::analyzer
