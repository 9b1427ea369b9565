// The error-model library on the CPU backend: the plan of inject_plan.hpp (shared
// with the GPU plugins) applied by a per-element loop over oneTBB. The
// per-element arithmetic is backends/common/inject_element.h (shared with
// the GPU kernels).
//
// Determinism: every random word is Philox(seed, op, call, element index),
// the work is split over fixed-size chunks (chunks.hpp), and partial truths
// are merged in index order, so the tensor and the truth are the same for
// every thread count.
#include "lib/backend/cpu/cpu.hpp"

#include "lib/injector/inject.hpp"

#include "lib/core/dtype.hpp"
#include "lib/core/error.hpp"
#include "lib/injector/chunks.hpp"

#include "backends/common/inject_element.h"
#include "backends/common/inject_plan.hpp"
#include "backends/common/philox.h"
#include "backends/common/precision.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace peat::impl::backend::cpu {

using namespace injector;  // the spec, truth and chunk helpers of lib/injector

namespace {

namespace hd = peat::hd;
using inject_plan::Truth;
using kernels::Band;

void check(const Problem& p) {
  if (!p.ok()) throw Error(p.status, p.message);
}

struct Plan {
  peat_inject_spec_t spec;
  hd::ElementLayout layout;
  std::size_t elem_size;
  int64_t numel;
  int64_t rows, cols;
  inject_plan::Selection selection;
  std::vector<int64_t> band_row_start;  // kSelectBands: prefix sums of band rows
  uint64_t fixed_mask = 0;              // BITFLIP with a chosen bit
  hd::FloatFormat format{};
  std::vector<uint64_t> snapshot;  // TRANSPOSE / SHIFT: old words in index order
  bool random = true;              // the model draws per-element random words
  uint64_t seed;
  uint32_t op, call;
};

static_assert(store_code(Float::F16) == hd::kStoreF16 && store_code(Float::BF16) == hd::kStoreBF16 &&
              store_code(Float::F32) == hd::kStoreF32 && store_code(Float::F64) == hd::kStoreF64);

uint64_t load_word(const std::byte* p, std::size_t size) {
  switch (size) {
    case 2: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    default: { uint64_t v; std::memcpy(&v, p, 8); return v; }
  }
}
void store_word(std::byte* p, std::size_t size, uint64_t w) {
  switch (size) {
    case 2: { const uint16_t v = static_cast<uint16_t>(w); std::memcpy(p, &v, 2); return; }
    case 4: { const uint32_t v = static_cast<uint32_t>(w); std::memcpy(p, &v, 4); return; }
    default: std::memcpy(p, &w, 8); return;
  }
}

class Runner {
 public:
  Runner(const Plan& plan, const TensorView& tensor, const TensorView* stale)
      : plan_(plan), tensor_(tensor), stale_(stale) {}

  // Applies the model to element `k` (row-major index), recording the change.
  void element(int64_t k, Truth& p) const {
    // Models without randomness skip the Philox block (10 rounds per element).
    const hd::Philox4x32 w = plan_.random ? hd::philox_random(plan_.seed, plan_.op, plan_.call, static_cast<uint64_t>(k))
                                          : hd::Philox4x32{{0, 0, 0, 0}};
    const auto& s = plan_.spec;
    if (plan_.selection.kind == kernels::kSelectBernoulli && !hd::bernoulli(s.probability, w)) return;
    std::byte* ptr = tensor_.base + tensor_.offset_of(k) * static_cast<int64_t>(plan_.elem_size);
    const uint64_t old_bits = load_word(ptr, plan_.elem_size);
    ++p.selected;
    const hd::ElementLayout& l = plan_.layout;
    uint64_t new_bits = old_bits;
    switch (s.kind) {
      case PEAT_INJECT_BITFLIP: {
        const uint64_t mask = s.bit >= 0 ? plan_.fixed_mask
                                         : hd::random_bit_mask(l, s.field, s.bits, s.adjacent != 0, w, plan_.seed,
                                                               plan_.op, plan_.call, static_cast<uint64_t>(k));
        new_bits = old_bits ^ mask;
        break;
      }
      case PEAT_INJECT_STUCK_AT: new_bits = hd::stuck_at(old_bits, s.bit, s.stuck_value); break;
      case PEAT_INJECT_VALUE: new_bits = hd::value_bits(l, s.value_kind, s.value, s.range, w); break;
      case PEAT_INJECT_REGION: new_bits = fill_bits(k, w); break;
      case PEAT_INJECT_SCALE: new_bits = hd::scale_bits(old_bits, l, s.alpha); break;
      case PEAT_INJECT_TRANSPOSE: {
        const int64_t R = plan_.rows;
        new_bits = plan_.snapshot[static_cast<std::size_t>((k % R) * plan_.cols + k / R)];
        break;
      }
      case PEAT_INJECT_SHIFT: {
        const int64_t from = k - s.offset;
        if (from >= 0 && from < plan_.numel) new_bits = plan_.snapshot[static_cast<std::size_t>(from)];
        else if (s.fill != PEAT_FILL_KEEP) new_bits = fill_bits(k, w);
        break;
      }
      case PEAT_INJECT_PRECISION:
        new_bits = hd::precision_bits(old_bits, l, plan_.format, s.rounding, s.saturate != 0);
        break;
      case PEAT_INJECT_ULP_NOISE:
        new_bits = hd::ulp_step(old_bits, l, hd::ulp_delta(s.distribution, s.ulp, w));
        break;
      default: break;
    }
    new_bits &= hd::width_mask(l);
    if (new_bits == old_bits) return;
    store_word(ptr, plan_.elem_size, new_bits);
    record(k, old_bits, new_bits, p);
  }

  void record(int64_t k, uint64_t old_bits, uint64_t new_bits, Truth& p) const {
    const hd::ElementLayout& l = plan_.layout;
    ++p.changed;
    if (hd::is_finite_bits(old_bits, l) && !hd::is_finite_bits(new_bits, l)) ++p.new_nonfinite;
    if (p.first < 0) p.first = k;
    p.last = k;
    const int64_t r = plan_.cols > 0 ? k / plan_.cols : 0, c = plan_.cols > 0 ? k % plan_.cols : 0;
    if (p.row_min < 0) {
      p.row_min = p.row_max = r;
      p.col_min = p.col_max = c;
    } else {
      p.row_min = std::min(p.row_min, r);
      p.row_max = std::max(p.row_max, r);
      p.col_min = std::min(p.col_min, c);
      p.col_max = std::max(p.col_max, c);
    }
    uint64_t x = old_bits ^ new_bits;
    while (x != 0) {
      const int b = __builtin_ctzll(x);
      ++p.bit_flips[b];
      x &= x - 1;
    }
    if (p.recorded < PEAT_INJECT_TRUTH_CAPACITY) {
      peat_inject_change_t& ch = p.changes[p.recorded++];
      ch.index = k;
      ch.old_bits = old_bits;
      ch.new_bits = new_bits;
      ch.old_value = hd::load_as_double(old_bits, l.store);
      ch.new_value = hd::load_as_double(new_bits, l.store);
    }
  }

 private:
  uint64_t fill_bits(int64_t k, const hd::Philox4x32& w) const {
    switch (plan_.spec.fill) {
      case PEAT_FILL_GARBAGE: return hd::garbage_bits(plan_.layout, w);
      case PEAT_FILL_STALE:
        return load_word(stale_->base + stale_->offset_of(k) * static_cast<int64_t>(plan_.elem_size), plan_.elem_size);
      default: return 0;
    }
  }

  const Plan& plan_;
  const TensorView& tensor_;
  const TensorView* stale_;
};

}  // namespace

void apply_inject(const peat_inject_spec_t& spec, const TensorView& tensor, const TensorView* stale, uint64_t seed,
                  uint32_t op, uint32_t call, peat_inject_truth_t& truth) {
  validate_spec(spec, "spec");
  const Float kind = require_float(tensor.dtype, "tensor");
  Plan plan;
  plan.spec = spec;
  plan.layout = hd::layout_of(store_code(kind));
  plan.elem_size = float_size(kind);
  plan.numel = tensor.numel;
  plan.seed = seed;
  plan.op = op;
  plan.call = call;
  check(inject_plan::view_2d(spec, tensor.ndim == 0 ? 1 : tensor.shape[tensor.ndim - 1], tensor.numel, plan.rows,
                             plan.cols));
  check(inject_plan::tensor_checks(spec, plan.layout, float_name(kind), tensor.numel, plan.fixed_mask, plan.format));
  if (inject_plan::needs_stale(spec)) {
    if (stale == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "spec.stale is NULL but spec.fill is STALE");
    if (!(stale->dtype == tensor.dtype))
      fail(PEAT_STATUS_SHAPE_MISMATCH, "spec.stale has dtype {} but the tensor has {}", dtype_name(stale->dtype),
           dtype_name(tensor.dtype));
    require_same_shape(*stale, "spec.stale", tensor, "the tensor");
  }
  check(inject_plan::select(spec, tensor.numel, plan.rows, plan.cols, seed, op, call, plan.selection));
  int64_t total_rows = 0;
  for (const Band& b : plan.selection.bands) {
    plan.band_row_start.push_back(total_rows);
    total_rows += b.r1 - b.r0;
  }
  plan.band_row_start.push_back(total_rows);
  plan.random = inject_plan::draws_random(spec, plan.selection.kind);

  // Layout faults read the old contents first.
  if (spec.kind == PEAT_INJECT_TRANSPOSE || spec.kind == PEAT_INJECT_SHIFT) {
    plan.snapshot.resize(static_cast<std::size_t>(tensor.numel));
    for_chunks(tensor.numel, kGrainElements, [&](int64_t a, int64_t b) {
      for (int64_t k = a; k < b; ++k)
        plan.snapshot[static_cast<std::size_t>(k)] =
            load_word(tensor.base + tensor.offset_of(k) * static_cast<int64_t>(plan.elem_size), plan.elem_size);
    });
  }

  const Runner runner(plan, tensor, stale);
  Truth result;
  switch (plan.selection.kind) {
    case kernels::kSelectLanes: {
      const int64_t P = spec.lane_period, L = spec.lane;
      result = run_chunks<Truth>(tensor.numel, kGrainElements, [&](int64_t a, int64_t b, Truth& p) {
        int64_t k = a + ((L - a % P) % P + P) % P;
        for (; k < b; k += P) runner.element(k, p);
      });
      break;
    }
    case kernels::kSelectList: {
      const auto& list = plan.selection.list;
      result = run_chunks<Truth>(static_cast<int64_t>(list.size()), 4096, [&](int64_t a, int64_t b, Truth& p) {
        for (int64_t i = a; i < b; ++i) runner.element(list[static_cast<std::size_t>(i)], p);
      });
      break;
    }
    case kernels::kSelectBands: {
      const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, plan.cols));
      result = run_chunks<Truth>(total_rows, grain, [&](int64_t a, int64_t b, Truth& p) {
        for (int64_t u = a; u < b; ++u) {
          const auto it = std::upper_bound(plan.band_row_start.begin(), plan.band_row_start.end(), u);
          const std::size_t bi = static_cast<std::size_t>(it - plan.band_row_start.begin()) - 1;
          const Band& band = plan.selection.bands[bi];
          const int64_t row = band.r0 + (u - plan.band_row_start[bi]);
          for (int64_t c = band.c0; c < band.c1; ++c) runner.element(row * plan.cols + c, p);
        }
      });
      break;
    }
    default:  // every element, or each with probability p
      result = run_chunks<Truth>(tensor.numel, kGrainElements, [&](int64_t a, int64_t b, Truth& p) {
        for (int64_t k = a; k < b; ++k) runner.element(k, p);
      });
  }
  truth = result.finish(spec, plan.layout.width, tensor.numel, plan.rows, plan.cols, seed, op, call);
}

}  // namespace peat::impl::backend::cpu
