// gpu_inject_entry.hpp — the inject entry of a GPU plugin, written once for
// CUDA and HIP over the runtime traits R of gpu_runtime_table.hpp.
//
// Host side of the injection kernel (kernels/inject_kernels.cu): reads and
// checks the spec against the tensor with the rules of the CPU path
// (lib/injector/inject.cpp: validate_spec, apply_cpu), plans the element
// selection (an explicit list, `count` distinct elements by Floyd's algorithm
// with the same Philox draws, Bernoulli, lanes, region bands), launches, and
// merges the blocks' partial truths in block order, as the CPU merges its
// chunks. The kernel applies the same peat::hd functions with the same Philox
// words, so the tensor's bits and the truth equal the CPU backend's. C++17.
#pragma once

#include "gpu_signature_entry.hpp"
#include "kernels/kernel_launch.h"

#include <peat/injector.h>

#include <algorithm>
#include <unordered_set>

namespace peat::gpu {

template <typename R>
struct GpuInject {
  using Table = RuntimeTable<R>;
  using E = GpuEntries<R>;

  template <typename V>
  static peat_status_t bad(const char* field, const V& value, const char* why) {
    return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("spec.{} = {}: {}", field, value, why));
  }

  static bool uses_selection(int32_t kind) {
    return kind == PEAT_INJECT_BITFLIP || kind == PEAT_INJECT_VALUE || kind == PEAT_INJECT_ULP_NOISE;
  }
  static bool uses_region(const peat_inject_spec_t& s) {
    return s.kind == PEAT_INJECT_REGION || (s.kind == PEAT_INJECT_STUCK_AT && s.scope == PEAT_STUCK_REGION);
  }

  // The tensor-independent checks of the CPU's validate_spec.
  static peat_status_t validate(const peat_inject_spec_t& s) {
    if (s.kind < PEAT_INJECT_BITFLIP || s.kind > PEAT_INJECT_ULP_NOISE) return bad("kind", s.kind, "not a peat_inject_kind_code value (0..8)");
    if (uses_selection(s.kind)) {
      if (s.elements == nullptr && !(s.probability > 0.0) && s.count < 1) return bad("count", s.count, "must be >= 1");
      if (s.elements != nullptr && s.count < 1) return bad("count", s.count, "must be >= 1 (the length of elements)");
      if (!(s.probability >= 0.0 && s.probability <= 1.0)) return bad("probability", s.probability, "must be in [0, 1]");
    }
    switch (s.kind) {
      case PEAT_INJECT_BITFLIP:
        if (s.bits < 1 || s.bits > 64) return bad("bits", s.bits, "must be in [1, 64]");
        if (s.bit < -1 || s.bit > 63) return bad("bit", s.bit, "must be -1 (random) or a bit index in [0, 63]");
        if (s.field < PEAT_BIT_FIELD_ANY || s.field > PEAT_BIT_FIELD_MANTISSA) return bad("field", s.field, "not a peat_bit_field_code value (0..3)");
        if (s.adjacent != 0 && s.adjacent != 1) return bad("adjacent", s.adjacent, "must be 0 or 1");
        break;
      case PEAT_INJECT_STUCK_AT:
        if (s.bit < 0 || s.bit > 63) return bad("bit", s.bit, "stuck-at needs a bit index in [0, 63]");
        if (s.stuck_value != 0 && s.stuck_value != 1) return bad("stuck_value", s.stuck_value, "must be 0 or 1");
        if (s.scope < PEAT_STUCK_ALL || s.scope > PEAT_STUCK_REGION) return bad("scope", s.scope, "not a peat_stuck_scope_code value (0..2)");
        if (s.scope == PEAT_STUCK_LANE) {
          if (s.lane_period < 1 || s.lane_period > 1024) return bad("lane_period", s.lane_period, "must be in [1, 1024]");
          if (s.lane < 0 || s.lane >= s.lane_period) return bad("lane", s.lane, "must be in [0, lane_period)");
        }
        break;
      case PEAT_INJECT_VALUE:
        if (s.value_kind < PEAT_VALUE_ZERO || s.value_kind > PEAT_VALUE_CONSTANT) return bad("value_kind", s.value_kind, "not a peat_value_kind_code value (0..5)");
        if (s.value_kind == PEAT_VALUE_RANDOM && !(std::isfinite(s.range) && s.range > 0.0)) return bad("range", s.range, "must be finite and > 0");
        break;
      case PEAT_INJECT_REGION:
        if (s.fill < PEAT_FILL_ZEROS || s.fill > PEAT_FILL_STALE) return bad("fill", s.fill, "a region is filled with ZEROS, GARBAGE or STALE (0..2)");
        break;
      case PEAT_INJECT_SCALE:
        if (!std::isfinite(s.alpha)) return bad("alpha", s.alpha, "must be finite");
        break;
      case PEAT_INJECT_SHIFT:
        if (s.fill < PEAT_FILL_ZEROS || s.fill > PEAT_FILL_KEEP) return bad("fill", s.fill, "not a peat_fill_code value (0..3)");
        break;
      case PEAT_INJECT_PRECISION:
        if (s.format < PEAT_FORMAT_BF16 || s.format > PEAT_FORMAT_FP8_E5M2) return bad("format", s.format, "not a peat_float_format_code value (0..4)");
        if (s.rounding != PEAT_ROUND_NEAREST_EVEN && s.rounding != PEAT_ROUND_TRUNCATE) return bad("rounding", s.rounding, "not a peat_rounding_code value (0..1)");
        if (s.saturate != 0 && s.saturate != 1) return bad("saturate", s.saturate, "must be 0 or 1");
        break;
      case PEAT_INJECT_ULP_NOISE:
        if (s.ulp < 1 || s.ulp > (1 << 20)) return bad("ulp", s.ulp, "must be in [1, 2^20]");
        if (s.distribution < PEAT_ULP_UNIFORM || s.distribution > PEAT_ULP_NORMAL) return bad("distribution", s.distribution, "not a peat_ulp_distribution_code value (0..2)");
        break;
      default: break;
    }
    if (uses_region(s)) {
      if (s.region < PEAT_REGION_ROWS || s.region > PEAT_REGION_REMAINDER) return bad("region", s.region, "not a peat_region_shape_code value (0..4)");
      if (s.extent < 1) return bad("extent", s.extent, "must be >= 1");
      if (s.first < 0) return bad("first", s.first, "must be >= 0");
      if (s.tile_rows < 1) return bad("tile_rows", s.tile_rows, "must be >= 1");
      if (s.tile_cols < 1) return bad("tile_cols", s.tile_cols, "must be >= 1");
    }
    if (s.rows < 0) return bad("rows", s.rows, "must be >= 0");
    if (s.cols < 0) return bad("cols", s.cols, "must be >= 0");
    if ((s.rows == 0) != (s.cols == 0)) return bad("rows", s.rows, "rows and cols are both 0 (derive) or both set");
    return PEAT_STATUS_OK;
  }

  // The region as row bands (the CPU's resolve_region).
  static peat_status_t region_bands(const peat_inject_spec_t& s, int64_t R_, int64_t C, std::vector<kernels::Band>& bands) {
    const auto add = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
      if (r0 < r1 && c0 < c1) bands.push_back(kernels::Band{r0, r1, c0, c1});
    };
    const auto outside = [&](const std::string& what) {
      return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("spec: region {} lies outside the {} x {} view", what, R_, C));
    };
    const int64_t tgr = R_ / s.tile_rows + (R_ % s.tile_rows != 0), tgc = C / s.tile_cols + (C % s.tile_cols != 0);
    switch (s.region) {
      case PEAT_REGION_ROWS:
        if (s.first >= R_ || s.extent > R_ - s.first) return outside(fmt::format("of {} rows from row {} (extent, first)", s.extent, s.first));
        add(s.first, s.first + s.extent, 0, C);
        break;
      case PEAT_REGION_COLUMNS:
        if (s.first >= C || s.extent > C - s.first) return outside(fmt::format("of {} columns from column {} (extent, first)", s.extent, s.first));
        add(0, R_, s.first, s.first + s.extent);
        break;
      case PEAT_REGION_TILES: {
        const int64_t ntiles = tgr * tgc;
        if (s.first >= ntiles || s.extent > ntiles - s.first) return outside(fmt::format("of {} tiles from tile {} (extent, first)", s.extent, s.first));
        const int64_t last = s.first + s.extent - 1;
        for (int64_t tr = s.first / tgc; tr <= last / tgc; ++tr) {
          const int64_t t0 = std::max(s.first, tr * tgc), t1 = std::min(last, tr * tgc + tgc - 1);
          add(tr * s.tile_rows, std::min(R_, (tr + 1) * s.tile_rows), (t0 % tgc) * s.tile_cols, std::min(C, (t1 % tgc + 1) * s.tile_cols));
        }
        break;
      }
      case PEAT_REGION_LAST_TILE:
        if (R_ == 0 || C == 0) return outside("last tile");
        add((tgr - 1) * s.tile_rows, R_, (tgc - 1) * s.tile_cols, C);
        break;
      case PEAT_REGION_REMAINDER: {
        const int64_t R0 = (R_ / s.tile_rows) * s.tile_rows, C0 = (C / s.tile_cols) * s.tile_cols;
        if (R0 == R_ && C0 == C)
          return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("spec: the {} x {} view has no partial tile", R_, C));
        add(0, R0, C0, C);
        add(R0, R_, 0, C);
        break;
      }
      default: break;
    }
    return PEAT_STATUS_OK;
  }

  // `count` distinct indices in [0, n), sorted (the CPU's random_distinct).
  static std::vector<int64_t> random_distinct(int64_t count, int64_t n, uint64_t seed, uint32_t op, uint32_t call) {
    namespace hd = peat::hd;
    std::unordered_set<int64_t> chosen;
    chosen.reserve(static_cast<std::size_t>(count) * 2);
    for (int64_t j = n - count; j < n; ++j) {
      const hd::Philox4x32 w = hd::philox_random(seed, op, call, hd::tagged(static_cast<uint64_t>(j), hd::kTagSelect));
      const int64_t t = static_cast<int64_t>(hd::uniform_index(hd::philox_uniform(w.v[0], w.v[1]), static_cast<uint64_t>(j) + 1));
      if (!chosen.insert(t).second) chosen.insert(j);
    }
    std::vector<int64_t> out(chosen.begin(), chosen.end());
    std::sort(out.begin(), out.end());
    return out;
  }

  static peat_error_model_t model_of(const peat_inject_spec_t& s) {
    switch (s.kind) {
      case PEAT_INJECT_BITFLIP:
        return (s.bits == 1 && s.elements == nullptr && !(s.probability > 0.0) && s.count == 1) ||
                       (s.bits == 1 && s.elements != nullptr && s.count == 1)
                   ? PEAT_ERROR_MODEL_BITFLIP_SINGLE : PEAT_ERROR_MODEL_BITFLIP_MULTI;
      case PEAT_INJECT_STUCK_AT: return PEAT_ERROR_MODEL_STUCK_AT;
      case PEAT_INJECT_VALUE:
        switch (s.value_kind) {
          case PEAT_VALUE_ZERO: return PEAT_ERROR_MODEL_DROPPED_WRITES;
          case PEAT_VALUE_NAN: case PEAT_VALUE_POS_INF: case PEAT_VALUE_NEG_INF: return PEAT_ERROR_MODEL_NONFINITE;
          default: return PEAT_ERROR_MODEL_GARBAGE;
        }
      case PEAT_INJECT_REGION: return PEAT_ERROR_MODEL_REGION;
      case PEAT_INJECT_SCALE: return PEAT_ERROR_MODEL_SCALING;
      case PEAT_INJECT_TRANSPOSE: case PEAT_INJECT_SHIFT: return PEAT_ERROR_MODEL_GARBAGE;
      case PEAT_INJECT_PRECISION: return PEAT_ERROR_MODEL_REDUCED_PRECISION;
      case PEAT_INJECT_ULP_NOISE: return PEAT_ERROR_MODEL_ROUNDING;
      default: return PEAT_ERROR_MODEL_UNKNOWN;
    }
  }

  static peat_status_t inject(DLTensor* tensor, const struct peat_inject_spec* spec, uint64_t seed, uint32_t op,
                              uint32_t call, struct peat_inject_truth* out_truth, void* stream) noexcept {
    try {
      return inject_impl(tensor, spec, seed, op, call, out_truth, stream);
    } catch (const std::bad_alloc&) {
      return Table::fail(PEAT_STATUS_OUT_OF_MEMORY, "inject: out of host memory");
    } catch (...) {
      return Table::fail(PEAT_STATUS_INTERNAL, "inject: internal error");
    }
  }

  static peat_status_t inject_impl(DLTensor* tensor, const peat_inject_spec_t* spec_in, uint64_t seed, uint32_t op,
                                   uint32_t call, peat_inject_truth_t* out_truth, void* stream) {
    namespace k = peat::kernels;
    namespace hd = peat::hd;
    if (spec_in == nullptr) return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, "argument 'spec' is NULL");
    if (spec_in->struct_size < offsetof(peat_inject_spec_t, kind) + sizeof(int32_t) || spec_in->struct_size > sizeof(peat_inject_spec_t))
      return Table::fail(PEAT_STATUS_VERSION_MISMATCH, fmt::format("spec.struct_size {} is not accepted", spec_in->struct_size));
    if (out_truth != nullptr && (out_truth->struct_size < sizeof(uint32_t) || out_truth->struct_size > sizeof(peat_inject_truth_t)))
      return Table::fail(PEAT_STATUS_VERSION_MISMATCH, fmt::format("out_truth.struct_size {} is not accepted", out_truth->struct_size));
    // Older (smaller) specs keep the defaults of their kind for missing fields.
    peat_inject_spec_t s;
    peat_inject_spec_init(&s, spec_in->kind);
    std::memcpy(&s, spec_in, spec_in->struct_size);
    s.struct_size = sizeof(s);
    if (const peat_status_t st = validate(s); st != PEAT_STATUS_OK) return st;
    DeviceTensor t;
    if (const peat_status_t st = E::check_tensor(tensor, "tensor", t); st != PEAT_STATUS_OK) return st;

    k::InjectLaunch p;
    p.spec = s;
    p.layout = hd::layout_of(t.store);
    p.elem_size = t.elem_size;
    p.numel = t.numel;
    p.seed = seed;
    p.op = op;
    p.call = call;
    const int32_t width = p.layout.width;
    if (s.rows == 0 && s.cols == 0) {
      p.cols = tensor->ndim == 0 ? 1 : tensor->shape[tensor->ndim - 1];
      p.rows = p.cols > 0 ? t.numel / p.cols : 0;
    } else {
      p.rows = s.rows;
      p.cols = s.cols;
      if (s.rows > t.numel / s.cols || s.rows * s.cols != t.numel)
        return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("spec.rows x spec.cols = {} x {} does not cover the tensor's {} elements",
                                                                     s.rows, s.cols, t.numel));
    }
    switch (s.kind) {
      case PEAT_INJECT_BITFLIP:
        if (s.bit >= 0) {
          if (s.bit + s.bits > width)
            return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("spec.bit = {} with spec.bits = {}: bits [{}, {}) lie beyond the {}-bit {}",
                                                                         s.bit, s.bits, s.bit, s.bit + s.bits, width, peat_dtype_name(tensor->dtype)));
          p.fixed_mask = hd::fixed_bit_mask(s.bit, s.bits);
        } else {
          int32_t lo = 0, count = 0;
          hd::field_range(p.layout, s.field, lo, count);
          if (s.bits > count)
            return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("spec.bits = {}: the field of {} has only {} bits", s.bits,
                                                                         peat_dtype_name(tensor->dtype), count));
        }
        break;
      case PEAT_INJECT_STUCK_AT:
        if (s.bit >= width)
          return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("spec.bit = {} lies beyond the {}-bit {}", s.bit, width, peat_dtype_name(tensor->dtype)));
        break;
      case PEAT_INJECT_SHIFT:
        if (s.offset <= -t.numel || s.offset >= t.numel)
          return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("spec.offset = {} moves every element out of the {}-element tensor", s.offset, t.numel));
        break;
      case PEAT_INJECT_PRECISION: hd::format_by_code(s.format, p.format); break;
      default: break;
    }
    DeviceTensor stale;
    const bool needs_stale = (s.kind == PEAT_INJECT_REGION || s.kind == PEAT_INJECT_SHIFT) && s.fill == PEAT_FILL_STALE;
    if (needs_stale) {
      if (s.stale == nullptr) return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, "spec.stale is NULL but spec.fill is STALE");
      if (const peat_status_t st = E::check_tensor(s.stale, "spec.stale", stale); st != PEAT_STATUS_OK) return st;
      bool same = s.stale->ndim == tensor->ndim && stale.store == t.store;
      for (int d = 0; same && d < tensor->ndim; ++d) same = s.stale->shape[d] == tensor->shape[d];
      if (!same) return Table::fail(PEAT_STATUS_SHAPE_MISMATCH, "spec.stale differs from the tensor in shape or dtype");
      p.stale = stale.data;
    }

    // Element selection.
    std::vector<int64_t> list;
    std::vector<k::Band> bands;
    std::vector<int64_t> band_start;
    if (uses_selection(s.kind)) {
      if (s.elements != nullptr) {
        p.selection = k::kSelectList;
        list.assign(s.elements, s.elements + s.count);
        for (int64_t i = 0; i < s.count; ++i)
          if (list[static_cast<std::size_t>(i)] < 0 || list[static_cast<std::size_t>(i)] >= t.numel)
            return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("spec.elements[{}] = {} is outside [0, {})", i,
                                                                         list[static_cast<std::size_t>(i)], t.numel));
        std::sort(list.begin(), list.end());
        list.erase(std::unique(list.begin(), list.end()), list.end());
      } else if (s.probability > 0.0) {
        p.selection = k::kSelectBernoulli;
      } else {
        if (s.count > t.numel)
          return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("spec.count = {} exceeds the tensor's {} elements", s.count, t.numel));
        p.selection = k::kSelectList;
        list = random_distinct(s.count, t.numel, seed, op, call);
      }
    } else if (uses_region(s)) {
      p.selection = k::kSelectBands;
      if (const peat_status_t st = region_bands(s, p.rows, p.cols, bands); st != PEAT_STATUS_OK) return st;
    } else if (s.kind == PEAT_INJECT_STUCK_AT && s.scope == PEAT_STUCK_LANE) {
      p.selection = k::kSelectLanes;
    } else {
      p.selection = k::kSelectAll;
    }
    switch (p.selection) {
      case k::kSelectList: p.units = static_cast<int64_t>(list.size()); break;
      case k::kSelectLanes: p.units = s.lane < t.numel ? (t.numel - s.lane + s.lane_period - 1) / s.lane_period : 0; break;
      case k::kSelectBands: {
        int64_t total = 0;
        for (const k::Band& b : bands) {
          band_start.push_back(total);
          total += (b.r1 - b.r0) * (b.c1 - b.c0);
        }
        band_start.push_back(total);
        p.units = total;
        p.n_bands = static_cast<int32_t>(bands.size());
        break;
      }
      default: p.units = t.numel; break;
    }
    p.random = p.selection == k::kSelectBernoulli || (s.kind == PEAT_INJECT_BITFLIP && s.bit < 0) ||
               (s.kind == PEAT_INJECT_VALUE && s.value_kind == PEAT_VALUE_RANDOM) ||
               ((s.kind == PEAT_INJECT_REGION || s.kind == PEAT_INJECT_SHIFT) && s.fill == PEAT_FILL_GARBAGE) ||
               s.kind == PEAT_INJECT_ULP_NOISE;

    if (const peat_status_t st = Table::check(R::set_device(t.device), "set device"); st != PEAT_STATUS_OK) return st;
    const auto strm = static_cast<typename R::stream_t>(stream);
    DeviceBuffer<R> snapshot, dev_list, dev_bands, dev_start, partials;
    const std::size_t bytes = static_cast<std::size_t>(t.numel) * static_cast<std::size_t>(t.elem_size);
    // Layout faults read the old contents first.
    if (s.kind == PEAT_INJECT_TRANSPOSE || s.kind == PEAT_INJECT_SHIFT) {
      if (const peat_status_t st = E::device_alloc(snapshot, bytes, "malloc (snapshot)"); st != PEAT_STATUS_OK) return st;
      if (const peat_status_t st = Table::check(R::memcpy_async(snapshot.ptr, t.data, bytes, strm), "memcpy (snapshot)"); st != PEAT_STATUS_OK) return st;
      p.snapshot = snapshot.ptr;
    }
    const auto upload = [&](DeviceBuffer<R>& buf, const void* src, std::size_t n, const char* what) {
      if (const peat_status_t st = E::device_alloc(buf, n, what); st != PEAT_STATUS_OK) return st;
      return n == 0 ? PEAT_STATUS_OK : Table::check(R::memcpy_async(buf.ptr, src, n, strm), what);
    };
    if (p.selection == k::kSelectList) {
      if (const peat_status_t st = upload(dev_list, list.data(), list.size() * 8, "upload (element list)"); st != PEAT_STATUS_OK) return st;
      p.list = dev_list.template as<int64_t>();
    }
    if (p.selection == k::kSelectBands) {
      if (const peat_status_t st = upload(dev_bands, bands.data(), bands.size() * sizeof(k::Band), "upload (bands)"); st != PEAT_STATUS_OK) return st;
      if (const peat_status_t st = upload(dev_start, band_start.data(), band_start.size() * 8, "upload (bands)"); st != PEAT_STATUS_OK) return st;
      p.bands = dev_bands.template as<k::Band>();
      p.band_start = dev_start.template as<int64_t>();
    }
    k::inject_grid(p.units, p.units_per_block, p.blocks);
    if (const peat_status_t st = E::device_alloc(partials, sizeof(k::BlockTruth) * p.blocks, "malloc (block truths)"); st != PEAT_STATUS_OK) return st;
    p.data = t.data;
    p.block_out = partials.template as<k::BlockTruth>();
    if (p.units > 0)
      if (const int e = k::launch_inject(p, stream); e != 0)
        return Table::fail(PEAT_STATUS_INTERNAL, fmt::format("inject kernel launch: {}", k::launch_error_string(e)));
    std::vector<k::BlockTruth> parts(p.units > 0 ? static_cast<std::size_t>(p.blocks) : 0);
    if (!parts.empty())
      if (const peat_status_t st = Table::check(R::memcpy_async(parts.data(), partials.ptr, sizeof(k::BlockTruth) * parts.size(), strm), "memcpy (block truths)");
          st != PEAT_STATUS_OK)
        return st;
    if (const peat_status_t st = Table::check(R::stream_sync(strm), "inject kernel"); st != PEAT_STATUS_OK) return st;

    // Merge in block (= index) order.
    peat_inject_truth_t truth{};
    truth.struct_size = sizeof(truth);
    truth.kind = s.kind;
    truth.model = model_of(s);
    truth.element_bits = width;
    truth.numel = t.numel;
    truth.first_index = truth.last_index = -1;
    truth.row_min = truth.row_max = truth.col_min = truth.col_max = -1;
    truth.rows = p.rows;
    truth.cols = p.cols;
    truth.seed = seed;
    truth.op = op;
    truth.call = call;
    for (const k::BlockTruth& b : parts) {
      truth.selected += static_cast<int64_t>(b.selected);
      truth.new_nonfinite += static_cast<int64_t>(b.new_nonfinite);
      for (int i = 0; i < 64; ++i) truth.bit_flips[i] += b.bit_flips[i];
      if (b.changed == 0) continue;
      truth.changed += static_cast<int64_t>(b.changed);
      if (truth.first_index < 0) truth.first_index = static_cast<int64_t>(b.first);
      truth.last_index = static_cast<int64_t>(b.last_plus1) - 1;
      const auto rmin = static_cast<int64_t>(b.row_min), rmax = static_cast<int64_t>(b.row_max_plus1) - 1;
      const auto cmin = static_cast<int64_t>(b.col_min), cmax = static_cast<int64_t>(b.col_max_plus1) - 1;
      truth.row_min = truth.row_min < 0 ? rmin : std::min(truth.row_min, rmin);
      truth.col_min = truth.col_min < 0 ? cmin : std::min(truth.col_min, cmin);
      truth.row_max = std::max(truth.row_max, rmax);
      truth.col_max = std::max(truth.col_max, cmax);
      for (int64_t i = 0; i < b.recorded && truth.recorded < PEAT_INJECT_TRUTH_CAPACITY; ++i) truth.changes[truth.recorded++] = b.changes[i];
    }
    if (out_truth != nullptr) {
      const uint32_t size = out_truth->struct_size;
      truth.struct_size = size;
      std::memcpy(out_truth, &truth, size);
    }
    return PEAT_STATUS_OK;
  }
};

}  // namespace peat::gpu
