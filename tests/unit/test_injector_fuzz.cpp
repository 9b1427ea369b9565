// "Never UB on any spec": thousands of specs with fields drawn from edge
// values (negative, zero, huge, NaN, unknown enum codes) on small tensors of
// every dtype and shape. Each call must return OK with a truth that matches
// the tensor change bit for bit, or a refusal status with a message and the
// tensor untouched. (Run under the sanitizers to catch the UB itself.)
#include <catch2/catch.hpp>

#include "injector_test_util.hpp"

#include <limits>
#include <random>

using namespace peat_test;

TEST_CASE("random specs: a status or an exact truth, never a crash", "[injector][models][fuzz]") {
  std::mt19937_64 rng(2024);
  const auto pick = [&](std::initializer_list<int64_t> values) {
    return *(values.begin() + static_cast<std::ptrdiff_t>(rng() % values.size()));
  };
  const auto pick_d = [&](std::initializer_list<double> values) {
    return *(values.begin() + static_cast<std::ptrdiff_t>(rng() % values.size()));
  };
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  const DLDataType types[] = {f16(), bf16(), f32(), f64()};
  int ok = 0, refused = 0;
  for (int iteration = 0; iteration < 4000; ++iteration) {
    const DLDataType dtype = types[rng() % 4];
    std::vector<int64_t> shape;
    const int ndim = static_cast<int>(rng() % 4);
    for (int d = 0; d < ndim; ++d) shape.push_back(static_cast<int64_t>(rng() % 7));
    if (rng() % 4 != 0)
      for (auto& e : shape) e = e == 0 ? 1 : e;  // mostly non-empty
    HostTensor x(dtype, shape);
    x.fill_pattern(rng());
    HostTensor stale = x;
    stale.fill_pattern(rng());
    HostTensor other_stale(dtype, {3, 3});

    peat_inject_spec_t s;
    peat_inject_spec_init(&s, static_cast<peat_inject_kind_t>(pick({-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 3, 1, 9})));
    int64_t chosen[4];
    const int n_chosen = static_cast<int>(rng() % 4) + 1;
    for (int i = 0; i < n_chosen; ++i) chosen[i] = pick({-1, 0, 1, 5, 40, 300, big});
    if (rng() % 3 == 0) {
      s.elements = chosen;
      s.count = n_chosen;
    } else {
      s.count = pick({-3, 0, 1, 2, 7, 50, 400, big});
    }
    s.probability = pick_d({0.0, 0.0, 0.5, 1.0, -0.5, 2.0, NAN});
    s.bits = static_cast<int32_t>(pick({-1, 0, 1, 2, 5, 11, 16, 33, 64, 65}));
    s.bit = static_cast<int32_t>(pick({-2, -1, -1, 0, 3, 15, 31, 52, 63, 64, 1000}));
    s.adjacent = static_cast<int32_t>(pick({0, 1, 2}));
    s.field = static_cast<int32_t>(pick({-1, 0, 1, 2, 3, 4}));
    s.stuck_value = static_cast<int32_t>(pick({0, 1, -1, 2}));
    s.scope = static_cast<int32_t>(pick({0, 1, 2, 3, -1}));
    s.lane_period = static_cast<int32_t>(pick({0, 1, 7, 32, 64, 1025}));
    s.lane = static_cast<int32_t>(pick({-1, 0, 5, 31, 63}));
    s.value_kind = static_cast<int32_t>(pick({-1, 0, 1, 2, 3, 4, 5, 6}));
    s.value = pick_d({0.0, 1.5, -1e300, INFINITY, NAN, 1e-310});
    s.range = pick_d({1.0, 0.0, -1.0, 1e300, INFINITY, NAN});
    if (rng() % 2) {
      s.rows = pick({0, 1, 2, 3, -1, big});
      s.cols = pick({0, 1, 2, 6, -2, big});
    }
    s.region = static_cast<int32_t>(pick({-1, 0, 1, 2, 3, 4, 5}));
    s.first = pick({0, 1, 2, -1, big, small});
    s.extent = pick({1, 2, 3, 0, -1, big});
    s.tile_rows = pick({1, 2, 3, 16, 0, -4, big});
    s.tile_cols = pick({1, 2, 4, 16, 0, big});
    s.fill = static_cast<int32_t>(pick({0, 1, 2, 3, 4, -1}));
    const int stale_choice = static_cast<int>(rng() % 3);
    s.stale = stale_choice == 0 ? nullptr : stale_choice == 1 ? &stale.t : &other_stale.t;
    s.alpha = pick_d({2.0, 0.0, -1.0, 1e300, INFINITY, NAN});
    s.offset = pick({1, -1, 0, 5, -5, big, small});
    s.format = static_cast<int32_t>(pick({0, 1, 2, 3, 4, 5, -1}));
    s.rounding = static_cast<int32_t>(pick({0, 1, 2, -1}));
    s.saturate = static_cast<int32_t>(pick({0, 1, 2}));
    s.ulp = static_cast<int32_t>(pick({1, 3, 0, -1, 1 << 20, (1 << 20) + 1}));
    s.distribution = static_cast<int32_t>(pick({0, 1, 2, 3, -1}));

    HostTensor y = x;
    peat_inject_truth_t truth;
    peat_inject_truth_init(&truth);
    peat_clear_last_error();
    const peat_status_t status = peat_inject_apply(&s, &y.t, nullptr, rng(), static_cast<uint32_t>(rng()),
                                                   static_cast<uint32_t>(rng()), &truth);
    INFO("iteration " << iteration << " kind " << s.kind << " status " << status << ": " << peat_last_error_message());
    if (status == PEAT_STATUS_OK) {
      ++ok;
      const int64_t cols = truth.cols > 0 ? truth.cols : 1;
      REQUIRE(check_truth(x, y, truth, cols) == "");
    } else {
      ++refused;
      REQUIRE((status == PEAT_STATUS_INVALID_ARGUMENT || status == PEAT_STATUS_SHAPE_MISMATCH ||
               status == PEAT_STATUS_UNSUPPORTED));
      REQUIRE(peat_last_error_message()[0] != '\0');
      REQUIRE(y.bytes == x.bytes);
    }
  }
  // Both outcomes must have been exercised for the test to mean anything.
  CHECK(ok > 200);
  CHECK(refused > 200);
}
