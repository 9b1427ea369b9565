// gpu_signature_entry.hpp — the signature_accumulate entry of a GPU plugin,
// written once for CUDA and HIP over the runtime traits R of
// gpu_runtime_table.hpp (plus R::memset_async).
//
// Host side of the signature kernel (kernels/signature_kernels.cu): checks the
// tensors (device memory of this backend, contiguous, f16/bf16/f32/f64, same
// shape), resolves the config's defaults exactly as the CPU backend does
// (through libpeat's public functions: peat_default_tolerance,
// peat_dtype_mantissa_bits), launches, merges the block partials in block
// order with peat::hd::merge_signature_data (the CPU's merge), and merges the
// result into the caller's signature and map with peat_signature_merge and
// peat_spatial_map_merge, so the header rules (dtypes, tolerances, flags) are
// libpeat's own. C++17.
#pragma once

#include "backends/common/gpu_runtime_table.hpp"
#include "backends/common/kernels/kernel_launch.h"
#include "backends/common/signature_element.h"
#include "backends/common/signature_plan.hpp"

#include <peat/analyzer.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace peat::gpu {

// A device buffer freed on scope exit.
template <typename R>
struct DeviceBuffer {
  void* ptr = nullptr;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr != nullptr) (void)R::free(ptr);
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

// A checked device tensor.
struct DeviceTensor {
  char* data = nullptr;  // element 0
  int64_t numel = 0;
  int32_t store = 0;     // peat::hd::kStoreF16 ...
  int32_t elem_size = 0;
  int32_t device = 0;
};

template <typename R>
struct GpuEntries {
  using Table = RuntimeTable<R>;

  static bool store_of(DLDataType d, int32_t& store, int32_t& size) {
    if (d.lanes != 1) return false;
    if (d.code == kDLFloat && d.bits == 16) { store = peat::hd::kStoreF16; size = 2; return true; }
    if (d.code == kDLBfloat && d.bits == 16) { store = peat::hd::kStoreBF16; size = 2; return true; }
    if (d.code == kDLFloat && d.bits == 32) { store = peat::hd::kStoreF32; size = 4; return true; }
    if (d.code == kDLFloat && d.bits == 64) { store = peat::hd::kStoreF64; size = 8; return true; }
    return false;
  }

  // Checks `t` (named `name` in messages) and fills *out.
  static peat_status_t check_tensor(const DLTensor* t, const char* name, DeviceTensor& out) {
    if (t == nullptr) return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("{} is NULL", name));
    if (const peat_status_t st = peat_tensor_numel(t, &out.numel); st != PEAT_STATUS_OK)
      return Table::fail(st, fmt::format("{}: {}", name, peat_last_error_message()));
    if (t->device.device_type != R::device_type)
      return Table::fail(PEAT_STATUS_UNSUPPORTED,
                         fmt::format("{}: device type {} is not this backend's device memory (type {})", name,
                                     static_cast<int>(t->device.device_type), R::device_type));
    if (!store_of(t->dtype, out.store, out.elem_size))
      return Table::fail(PEAT_STATUS_UNSUPPORTED, fmt::format("{}: dtype {} is not f16, bf16, f32 or f64", name,
                                                              peat_dtype_name(t->dtype)));
    if (t->strides != nullptr) {  // must be compact row-major
      int64_t expect = 1;
      for (int d = t->ndim - 1; d >= 0; --d) {
        if (t->shape[d] != 1 && t->strides[d] != expect)
          return Table::fail(PEAT_STATUS_UNSUPPORTED,
                             fmt::format("{}: strided tensors are not supported on the device (dimension {} has "
                                         "stride {}, contiguous would be {}); pass a contiguous copy",
                                         name, d, t->strides[d], expect));
        expect *= t->shape[d];
      }
    }
    if (out.numel > 0 && t->data == nullptr) return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("{}: data is NULL", name));
    out.data = static_cast<char*>(t->data) + t->byte_offset;
    out.device = t->device.device_id;
    return PEAT_STATUS_OK;
  }

  static peat_status_t device_alloc(DeviceBuffer<R>& buffer, std::size_t bytes, const char* what) {
    if (const peat_status_t st = Table::check(R::malloc(&buffer.ptr, bytes == 0 ? 1 : bytes), what); st != PEAT_STATUS_OK) {
      buffer.ptr = nullptr;
      return st;
    }
    return PEAT_STATUS_OK;
  }

  // Map geometry for a piece of n elements at index_base (the CPU's
  // resolve_spatial for pieces, signature_plan.hpp).
  static peat_status_t map_geometry(const DLTensor* golden, int64_t n, const peat_signature_config_t& c,
                                    peat_spatial_map_t& piece) {
    int64_t rows = 0, cols = 0;
    const Problem p = signature_plan::spatial_view(c.spatial_rows, c.spatial_cols,
                                                   golden->ndim == 0 ? 1 : golden->shape[golden->ndim - 1], n,
                                                   c.index_base, false, rows, cols);
    if (!p.ok()) return Table::fail(p.status, p.message);
    piece.rows = rows;
    piece.cols = cols;
    piece.tile_rows = c.tile_rows;
    piece.tile_cols = c.tile_cols;
    piece.tile_grid_rows = (rows + c.tile_rows - 1) / c.tile_rows;
    piece.tile_grid_cols = (cols + c.tile_cols - 1) / c.tile_cols;
    return PEAT_STATUS_OK;
  }

  // First/last mismatch, longest run and the runs touching the ends, from
  // the mismatch mask of elements [0, n) (global index = base + i).
  static void runs_from_mask(const std::vector<uint32_t>& mask, int64_t n, int64_t base, peat_spatial_map_t& m) {
    int64_t first = -1, last = -1, longest = 0, longest_start = -1, run_start = -1, run_len = 0, first_run = 0;
    bool first_closed = false;
    for (std::size_t w = 0; w < mask.size(); ++w) {
      const uint32_t word = mask[w];
      if (word == 0) continue;
      for (int b = 0; b < 32; ++b) {
        if (((word >> b) & 1u) == 0) continue;
        const int64_t i = static_cast<int64_t>(w) * 32 + b;
        if (last >= 0 && i == last + 1) {
          ++run_len;
        } else {
          if (last >= 0 && !first_closed) {
            first_run = run_len;
            first_closed = true;
          }
          run_start = i;
          run_len = 1;
        }
        if (run_len > longest) {
          longest = run_len;
          longest_start = run_start;
        }
        if (first < 0) first = i;
        last = i;
      }
    }
    if (first >= 0 && !first_closed) first_run = run_len;
    m.first_mismatch = first < 0 ? -1 : base + first;
    m.last_mismatch = last < 0 ? -1 : base + last;
    m.longest_run = longest;
    m.longest_run_start = longest_start < 0 ? -1 : base + longest_start;
    m.covered_begin = base;
    m.covered_end = base + n;
    m.leading_run = first == 0 ? first_run : 0;
    m.trailing_run = (last >= 0 && last == n - 1) ? run_len : 0;
  }

  static peat_status_t signature_accumulate(const DLTensor* golden, const DLTensor* candidate,
                                            const struct peat_signature_config* config,
                                            struct peat_signature* inout_signature, struct peat_spatial_map* inout_map,
                                            void* stream) noexcept {
    try {
      return signature_impl(golden, candidate, config, inout_signature, inout_map, stream);
    } catch (const std::bad_alloc&) {
      return Table::fail(PEAT_STATUS_OUT_OF_MEMORY, "signature_accumulate: out of host memory");
    } catch (...) {
      return Table::fail(PEAT_STATUS_INTERNAL, "signature_accumulate: internal error");
    }
  }

  static peat_status_t signature_impl(const DLTensor* golden, const DLTensor* candidate,
                                      const peat_signature_config_t* config, peat_signature_t* inout_signature,
                                      peat_spatial_map_t* inout_map, void* stream) {
    namespace k = peat::kernels;
    if (inout_signature == nullptr) return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, "inout_signature is NULL");
    if (inout_signature->struct_size != sizeof(peat_signature_t))
      return Table::fail(PEAT_STATUS_VERSION_MISMATCH, fmt::format("inout_signature: struct_size {} is not {}",
                                                                   inout_signature->struct_size, sizeof(peat_signature_t)));
    if (inout_map != nullptr && inout_map->struct_size != sizeof(peat_spatial_map_t))
      return Table::fail(PEAT_STATUS_VERSION_MISMATCH, fmt::format("inout_map: struct_size {} is not {} (call "
                                                                   "peat_spatial_map_init)",
                                                                   inout_map->struct_size, sizeof(peat_spatial_map_t)));
    peat_signature_config_t cfg;
    peat_signature_config_init(&cfg);
    if (config != nullptr) {
      if (config->struct_size < sizeof(uint32_t) || config->struct_size > sizeof(cfg))
        return Table::fail(PEAT_STATUS_VERSION_MISMATCH,
                           fmt::format("config: struct_size {} is not accepted", config->struct_size));
      std::memcpy(&cfg, config, config->struct_size);
      cfg.struct_size = sizeof(cfg);
    }
    DeviceTensor g, c;
    if (const peat_status_t st = check_tensor(golden, "golden", g); st != PEAT_STATUS_OK) return st;
    if (const peat_status_t st = check_tensor(candidate, "candidate", c); st != PEAT_STATUS_OK) return st;
    bool same_shape = golden->ndim == candidate->ndim;
    for (int d = 0; same_shape && d < golden->ndim; ++d) same_shape = golden->shape[d] == candidate->shape[d];
    if (!same_shape) return Table::fail(PEAT_STATUS_SHAPE_MISMATCH, "golden and candidate have different shapes");
    if (g.device != c.device)
      return Table::fail(PEAT_STATUS_UNSUPPORTED, fmt::format("golden is on device {} but candidate on device {}",
                                                              g.device, c.device));

    // The config's defaults, resolved as the CPU backend resolves them.
    for (const auto& [v, name] : {std::pair{cfg.rtol, "rtol"}, std::pair{cfg.atol, "atol"},
                                  std::pair{cfg.unit_roundoff, "unit_roundoff"}, std::pair{cfg.ratio_min_abs, "ratio_min_abs"}})
      if (std::isnan(v)) return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("config.{} is NaN", name));
    double def_rtol = 0, def_atol = 0, u = 0;
    int32_t mant = 0;
    (void)peat_default_tolerance(golden->dtype, &def_rtol, &def_atol);
    (void)peat_dtype_mantissa_bits(golden->dtype, &mant, &u);
    if (cfg.reduction_length < 0)
      return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("config.reduction_length is negative ({})", cfg.reduction_length));
    if (cfg.unit_roundoff < 0 || std::isinf(cfg.unit_roundoff))
      return Table::fail(PEAT_STATUS_INVALID_ARGUMENT,
                         fmt::format("config.unit_roundoff must be finite and >= 0 (got {})", cfg.unit_roundoff));
    if (cfg.index_base < 0)
      return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("config.index_base is negative ({})", cfg.index_base));
    if (cfg.map_mismatch != PEAT_MISMATCH_TOLERANCE && cfg.map_mismatch != PEAT_MISMATCH_BITWISE)
      return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("config.map_mismatch has unknown value {}", cfg.map_mismatch));
    if (cfg.tile_rows < 1 || cfg.tile_cols < 1)
      return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("config.tile_rows and tile_cols must be >= 1 (got {} x {})",
                                                                   cfg.tile_rows, cfg.tile_cols));
    const double rtol = cfg.rtol < 0 ? def_rtol : cfg.rtol;
    const double atol = cfg.atol < 0 ? def_atol : cfg.atol;
    const double unit_roundoff = cfg.unit_roundoff > 0 ? cfg.unit_roundoff : std::ldexp(1.0, -(mant + 1));
    const double ratio_min_abs = cfg.ratio_min_abs < 0 ? signature_plan::smallest_normal(g.store) : cfg.ratio_min_abs;

    peat_spatial_map_t piece;
    peat_spatial_map_init(&piece);
    if (inout_map != nullptr)
      if (const peat_status_t st = map_geometry(golden, g.numel, cfg, piece); st != PEAT_STATUS_OK) return st;

    if (const peat_status_t st = Table::check(R::set_device(g.device), "set device"); st != PEAT_STATUS_OK) return st;
    const auto s = static_cast<typename R::stream_t>(stream);
    k::SignatureLaunch launch;
    launch.golden = g.data;
    launch.candidate = c.data;
    launch.n = g.numel;
    launch.golden_store = g.store;
    launch.candidate_store = c.store;
    launch.rtol = rtol;
    launch.atol = atol;
    launch.ratio_min_abs = ratio_min_abs;
    launch.index_base = cfg.index_base;
    launch.blocks = k::signature_blocks(g.numel);
    DeviceBuffer<R> partials, mask, counts;
    if (const peat_status_t st = device_alloc(partials, sizeof(peat_signature_t) * launch.blocks, "malloc (block partials)");
        st != PEAT_STATUS_OK)
      return st;
    launch.block_out = partials.template as<peat_signature_t>();
    const std::size_t mask_words = static_cast<std::size_t>((g.numel + 31) / 32);
    const std::size_t n_tiles = static_cast<std::size_t>(piece.tile_grid_rows * piece.tile_grid_cols);
    const std::size_t n_counts = static_cast<std::size_t>(piece.rows + piece.cols) + n_tiles + 96;
    if (inout_map != nullptr) {
      if (const peat_status_t st = device_alloc(mask, mask_words * 4, "malloc (map mask)"); st != PEAT_STATUS_OK) return st;
      if (const peat_status_t st = device_alloc(counts, n_counts * 8, "malloc (map counts)"); st != PEAT_STATUS_OK) return st;
      if (const peat_status_t st = Table::check(R::memset_async(mask.ptr, 0, mask_words * 4, s), "memset");
          st != PEAT_STATUS_OK)
        return st;
      if (const peat_status_t st = Table::check(R::memset_async(counts.ptr, 0, n_counts * 8, s), "memset");
          st != PEAT_STATUS_OK)
        return st;
      uint64_t* base = counts.template as<uint64_t>();
      launch.map.mask = mask.template as<uint32_t>();
      launch.map.rows = base;
      launch.map.cols = base + piece.rows;
      launch.map.tiles = base + piece.rows + piece.cols;
      launch.map.lanes = base + piece.rows + piece.cols + n_tiles;
      launch.map.n_cols = piece.cols;
      launch.map.tile_rows = piece.tile_rows;
      launch.map.tile_cols = piece.tile_cols;
      launch.map.tile_grid_cols = piece.tile_grid_cols;
      launch.map.want_flags = cfg.map_mismatch == PEAT_MISMATCH_BITWISE ? peat::hd::kBitwiseMismatch : peat::hd::kToleranceFail;
    }
    if (const int e = k::launch_signature(launch, stream); e != 0)
      return Table::fail(PEAT_STATUS_INTERNAL, fmt::format("signature kernel launch: {}", k::launch_error_string(e)));
    std::vector<peat_signature_t> parts(static_cast<std::size_t>(launch.blocks));
    if (const peat_status_t st = Table::check(R::memcpy_async(parts.data(), partials.ptr, sizeof(peat_signature_t) * parts.size(), s),
                                              "memcpy (block partials)");
        st != PEAT_STATUS_OK)
      return st;
    std::vector<uint32_t> host_mask;
    std::vector<uint64_t> host_counts;
    if (inout_map != nullptr) {
      host_mask.resize(mask_words);
      host_counts.resize(n_counts);
      if (const peat_status_t st = Table::check(R::memcpy_async(host_mask.data(), mask.ptr, mask_words * 4, s), "memcpy (map mask)");
          st != PEAT_STATUS_OK)
        return st;
      if (const peat_status_t st = Table::check(R::memcpy_async(host_counts.data(), counts.ptr, n_counts * 8, s), "memcpy (map counts)");
          st != PEAT_STATUS_OK)
        return st;
    }
    if (const peat_status_t st = Table::check(R::stream_sync(s), "signature kernel"); st != PEAT_STATUS_OK) return st;

    // The block partials, merged in block order with the CPU's merge.
    peat_signature_t total;
    peat_signature_init(&total);
    for (const peat_signature_t& part : parts) peat::hd::merge_signature_data(total, part);
    total.golden_dtype = golden->dtype;
    total.candidate_dtype = candidate->dtype;
    total.rtol = rtol;
    total.atol = atol;
    total.reduction_length = cfg.reduction_length;
    total.unit_roundoff = unit_roundoff;
    peat_signature_t merged = *inout_signature;
    if (const peat_status_t st = peat_signature_merge(&merged, &total); st != PEAT_STATUS_OK)
      return Table::fail(st, peat_last_error_message());

    if (inout_map != nullptr)
      if (const peat_status_t st = merge_map_piece(piece, host_counts, host_mask, g.numel, cfg.index_base, *inout_map);
          st != PEAT_STATUS_OK)
        return Table::fail(st, fmt::format("inout_map: {}", peat_last_error_message()));
    *inout_signature = merged;
    return PEAT_STATUS_OK;
  }

  // Completes the map piece (geometry set) from what the kernel left: the
  // counters [rows | cols | tiles | lane32 | lane64] and the mismatch mask of
  // the piece's n elements starting at global index `base`, and merges it
  // into `into` with peat_spatial_map_merge (status returned, message in
  // peat_last_error_message()).
  static peat_status_t merge_map_piece(peat_spatial_map_t& piece, const std::vector<uint64_t>& counts,
                                       const std::vector<uint32_t>& mask, int64_t n, int64_t base,
                                       peat_spatial_map_t& into) {
    const std::size_t n_tiles = static_cast<std::size_t>(piece.tile_grid_rows * piece.tile_grid_cols);
    uint64_t* hc = const_cast<uint64_t*>(counts.data());  // read only: src of the merge
    piece.row_counts = hc;
    piece.row_capacity = static_cast<std::size_t>(piece.rows);
    piece.col_counts = hc + piece.rows;
    piece.col_capacity = static_cast<std::size_t>(piece.cols);
    piece.tile_counts = hc + piece.rows + piece.cols;
    piece.tile_capacity = n_tiles;
    std::memcpy(piece.lane32_counts, hc + piece.rows + piece.cols + n_tiles, sizeof(piece.lane32_counts));
    std::memcpy(piece.lane64_counts, hc + piece.rows + piece.cols + n_tiles + 32, sizeof(piece.lane64_counts));
    uint64_t count = 0;
    for (uint32_t w : mask) count += static_cast<uint64_t>(peat::hd::popcount64(w));
    piece.mismatch_count = count;
    runs_from_mask(mask, n, base, piece);
    return peat_spatial_map_merge(&into, &piece);
  }
};

}  // namespace peat::gpu
