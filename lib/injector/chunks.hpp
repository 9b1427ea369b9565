// Deterministic parallel loops of the CPU injector over oneTBB: fixed-size
// chunks, partial results merged in index order, so the tensor and the truth
// are the same for every thread count.
#pragma once

#include "lib/core/sanitizers.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <cstdint>

namespace peat::impl::injector {

// Under ThreadSanitizer the same chunks run serially (lib/core/sanitizers.hpp
// says why): the results are identical, since neither the chunks nor the
// (associative) merge order depend on the threads.
constexpr bool kSerialLoops = kThreadSanitizer;

// Calls fn(begin, end) over [0, n) in chunks of `grain`, in parallel.
template <typename Fn>
void for_chunks(int64_t n, int64_t grain, const Fn& fn) {
  if (n <= 0) return;
  if (kSerialLoops) {
    for (int64_t a = 0; a < n; a += grain) fn(a, std::min(n, a + grain));
    return;
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, grain),
                    [&](const tbb::blocked_range<int64_t>& r) { fn(r.begin(), r.end()); });
}

// Runs `body(first_unit, end_unit, partial)` over [0, units) in chunks of
// `grain`, deterministically, and merges the partials in order.
template <typename Result, typename Body>
Result run_chunks(int64_t units, int64_t grain, const Body& body) {
  if (units <= 0) return Result{};
  if (kSerialLoops) {
    Result total;
    for (int64_t a = 0; a < units; a += std::max<int64_t>(1, grain)) {
      Result p;
      body(a, std::min(units, a + std::max<int64_t>(1, grain)), p);
      total.add(p);
    }
    return total;
  }
  return tbb::parallel_deterministic_reduce(
      tbb::blocked_range<int64_t>(0, units, std::max<int64_t>(1, grain)), Result{},
      [&](const tbb::blocked_range<int64_t>& range, Result p) {
        body(range.begin(), range.end(), p);
        return p;
      },
      [](Result a, const Result& b) {
        a.add(b);
        return a;
      });
}

constexpr int64_t kGrainElements = 1 << 14;

}  // namespace peat::impl::injector
