// Aggregator: per-op merged signature over calls and steps, plus a compact,
// decimating series of per-call scalars (peat_aggregator_t).
#pragma once

#include <peat/analyzer.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace peat::impl::analyzer {

class Aggregator {
 public:
  explicit Aggregator(const peat_aggregator_options_t& options);

  // Thread-safe. Throws INVALID_ARGUMENT (op range, unmergeable signature).
  void add(uint32_t op, int64_t step, uint64_t call, const peat_signature_t& signature);
  peat_signature_t signature(uint32_t op) const;
  // Copies up to `capacity` points; returns the number held.
  std::size_t series(uint32_t op, peat_series_point_t* points, std::size_t capacity) const;
  uint64_t call_count(uint32_t op) const;

 private:
  struct OpState {
    peat_signature_t total;
    std::vector<peat_series_point_t> points;
    uint64_t calls = 0;
    uint64_t stride = 1;  // one point kept every `stride` calls
  };
  void check_op(uint32_t op) const;

  peat_aggregator_options_t options_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<OpState>> ops_;  // created on first add
};

}  // namespace peat::impl::analyzer

struct peat_aggregator : peat::impl::analyzer::Aggregator {
  using peat::impl::analyzer::Aggregator::Aggregator;
};
