// The injector's error models: each model's effect against a plainly written
// expectation, the ground truth against the actual tensor change (bit for
// bit), determinism across runs and thread counts, strided views, bad specs.
#include <catch2/catch.hpp>

#include "injector_test_util.hpp"

#include <tbb/global_control.h>

#include <algorithm>
#include <bit>
#include <set>

using namespace peat_test;

namespace {

struct Applied {
  HostTensor before, after;
  peat_inject_truth_t truth;
  peat_status_t status;
};

Applied run(const peat_inject_spec_t& spec, const HostTensor& input, uint64_t seed = 7, uint32_t op = 3,
            uint32_t call = 11) {
  Applied a{input, input, {}, 0};
  peat_inject_truth_init(&a.truth);
  a.status = peat_inject_apply(&spec, &a.after.t, nullptr, seed, op, call, &a.truth);
  return a;
}

int64_t last_dim(const HostTensor& t) { return t.shape.empty() ? 1 : t.shape.back(); }

void require_truth(const Applied& a) {
  REQUIRE(a.status == PEAT_STATUS_OK);
  INFO(peat_last_error_message());
  CHECK(check_truth(a.before, a.after, a.truth, a.truth.cols > 0 ? a.truth.cols : last_dim(a.before)) == "");
}

const DLDataType kAllTypes[] = {f16(), bf16(), f32(), f64()};

}  // namespace

TEST_CASE("bit flip at a chosen element and bit", "[injector][models]") {
  for (DLDataType dtype : kAllTypes) {
    HostTensor x(dtype, {8, 16});
    x.fill_pattern();
    peat_inject_spec_t s;
    peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
    const int64_t element = 37;
    s.elements = &element;
    s.count = 1;
    s.bit = dtype.bits - 2;  // top exponent bit
    Applied a = run(s, x);
    require_truth(a);
    CHECK(a.truth.changed == 1);
    CHECK(a.truth.model == PEAT_ERROR_MODEL_BITFLIP_SINGLE);
    CHECK(a.after.word(37) == (x.word(37) ^ (uint64_t{1} << (dtype.bits - 2))));
    CHECK(a.truth.changes[0].index == 37);
    CHECK(a.truth.bit_flips[dtype.bits - 2] == 1);
    CHECK(a.truth.element_bits == dtype.bits);
  }
}

TEST_CASE("bit flips: k random elements, k bits, fields, bursts", "[injector][models]") {
  for (DLDataType dtype : kAllTypes) {
    HostTensor x(dtype, {64, 33});
    x.fill_pattern(3);
    const int mant = dtype.bits == 16 ? (dtype.code == kDLBfloat ? 7 : 10) : dtype.bits == 32 ? 23 : 52;
    SECTION("k distinct bits in the mantissa") {
      peat_inject_spec_t s;
      peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
      s.count = 20;
      s.bits = 3;
      s.field = PEAT_BIT_FIELD_MANTISSA;
      Applied a = run(s, x);
      require_truth(a);
      CHECK(a.truth.changed == 20);
      CHECK(a.truth.selected == 20);
      CHECK(a.truth.model == PEAT_ERROR_MODEL_BITFLIP_MULTI);
      for (int64_t i = 0; i < x.numel(); ++i) {
        const uint64_t d = x.word(i) ^ a.after.word(i);
        if (d == 0) continue;
        CHECK(std::popcount(d) == 3);
        CHECK((d >> mant) == 0);
      }
    }
    SECTION("adjacent bits (burst) anywhere") {
      peat_inject_spec_t s;
      peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
      s.count = 15;
      s.bits = 4;
      s.adjacent = 1;
      Applied a = run(s, x);
      require_truth(a);
      CHECK(a.truth.changed == 15);
      for (int64_t i = 0; i < x.numel(); ++i) {
        uint64_t d = x.word(i) ^ a.after.word(i);
        if (d == 0) continue;
        d >>= std::countr_zero(d);
        CHECK(d == 0xFu);
      }
    }
    SECTION("sign and exponent fields") {
      peat_inject_spec_t s;
      peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
      s.count = 10;
      s.field = PEAT_BIT_FIELD_SIGN;
      Applied a = run(s, x);
      require_truth(a);
      CHECK(a.truth.bit_flips[dtype.bits - 1] == 10);
      s.field = PEAT_BIT_FIELD_EXPONENT;
      s.bits = 2;
      a = run(s, x);
      require_truth(a);
      uint64_t in_exponent = 0;
      for (int b = mant; b < dtype.bits - 1; ++b) in_exponent += a.truth.bit_flips[b];
      CHECK(in_exponent == 20);
    }
    SECTION("fixed bit range on chosen elements, duplicates ignored") {
      peat_inject_spec_t s;
      peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
      const int64_t elements[] = {5, 5, 1000, 0};
      s.elements = elements;
      s.count = 4;
      s.bit = 1;
      s.bits = 3;
      Applied a = run(s, x);
      require_truth(a);
      CHECK(a.truth.changed == 3);
      CHECK(a.after.word(1000) == (x.word(1000) ^ 0xEu));
      CHECK(a.truth.changes[0].index == 0);
      CHECK(a.truth.changes[2].index == 1000);
    }
    SECTION("probability selects about p * n elements") {
      peat_inject_spec_t s;
      peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
      s.probability = 0.25;
      Applied a = run(s, x);
      require_truth(a);
      const double n = static_cast<double>(x.numel()), mean = n * 0.25, sd = std::sqrt(n * 0.25 * 0.75);
      CHECK(std::abs(static_cast<double>(a.truth.selected) - mean) < 5 * sd);
      CHECK(a.truth.changed == a.truth.selected);
    }
  }
}

TEST_CASE("the random choice of elements covers the tensor uniformly", "[injector][models]") {
  // 2000 single-element flips over 10 cells: each cell gets about 200.
  HostTensor x(f32(), {10});
  x.fill_pattern();
  int hits[10] = {};
  peat_inject_spec_t s;
  peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
  for (uint32_t call = 0; call < 2000; ++call) {
    Applied a = run(s, x, 1, 0, call);
    REQUIRE(a.truth.changed == 1);
    ++hits[a.truth.changes[0].index];
  }
  for (int h : hits) CHECK(std::abs(h - 200) < 5 * std::sqrt(2000 * 0.1 * 0.9));
}

TEST_CASE("stuck-at on every element, a lane, a region", "[injector][models]") {
  for (DLDataType dtype : kAllTypes) {
    HostTensor x(dtype, {16, 40});
    x.fill_pattern(5);
    peat_inject_spec_t s;
    peat_inject_spec_init(&s, PEAT_INJECT_STUCK_AT);
    s.bit = 3;
    s.stuck_value = 1;
    Applied a = run(s, x);
    require_truth(a);
    CHECK(a.truth.model == PEAT_ERROR_MODEL_STUCK_AT);
    CHECK(a.truth.selected == x.numel());
    for (int64_t i = 0; i < x.numel(); ++i) CHECK(a.after.word(i) == (x.word(i) | 8u));

    s.scope = PEAT_STUCK_LANE;
    s.lane_period = 32;
    s.lane = 5;
    s.stuck_value = 0;
    s.bit = dtype.bits - 1;  // sign bit stuck at 0
    a = run(s, x);
    require_truth(a);
    CHECK(a.truth.selected == x.numel() / 32);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const uint64_t expect = i % 32 == 5 ? (x.word(i) & ~(uint64_t{1} << (dtype.bits - 1))) : x.word(i);
      CHECK(a.after.word(i) == expect);
    }

    s.scope = PEAT_STUCK_REGION;
    s.region = PEAT_REGION_COLUMNS;
    s.first = 38;
    s.extent = 2;
    s.bit = 0;
    s.stuck_value = 1;
    a = run(s, x);
    require_truth(a);
    CHECK(a.truth.selected == 32);
    for (int64_t i = 0; i < x.numel(); ++i)
      CHECK(a.after.word(i) == (i % 40 >= 38 ? (x.word(i) | 1u) : x.word(i)));
  }
}

TEST_CASE("value faults: zero, NaN, +-Inf, constant, random", "[injector][models]") {
  for (DLDataType dtype : kAllTypes) {
    HostTensor x(dtype, {100});
    x.fill_pattern(9);
    peat_inject_spec_t s;
    peat_inject_spec_init(&s, PEAT_INJECT_VALUE);
    s.count = 7;
    s.value_kind = PEAT_VALUE_ZERO;
    Applied a = run(s, x);
    require_truth(a);
    CHECK(a.truth.changed == 7);
    CHECK(a.truth.model == PEAT_ERROR_MODEL_DROPPED_WRITES);
    for (int k = 0; k < 7; ++k) CHECK(a.truth.changes[k].new_bits == 0);

    s.value_kind = PEAT_VALUE_NAN;
    a = run(s, x);
    require_truth(a);
    CHECK(a.truth.new_nonfinite == 7);
    CHECK(a.truth.model == PEAT_ERROR_MODEL_NONFINITE);
    for (int k = 0; k < 7; ++k) CHECK(std::isnan(a.truth.changes[k].new_value));

    s.value_kind = PEAT_VALUE_NEG_INF;
    a = run(s, x);
    require_truth(a);
    for (int k = 0; k < 7; ++k) CHECK(a.truth.changes[k].new_value == -INFINITY);
    s.value_kind = PEAT_VALUE_POS_INF;
    a = run(s, x);
    for (int k = 0; k < 7; ++k) CHECK(a.truth.changes[k].new_value == INFINITY);

    s.value_kind = PEAT_VALUE_CONSTANT;
    s.value = 1.5;
    a = run(s, x);
    require_truth(a);
    for (int k = 0; k < 7; ++k) CHECK(a.truth.changes[k].new_value == 1.5);

    s.value_kind = PEAT_VALUE_RANDOM;
    s.range = 1e-3;
    a = run(s, x);
    require_truth(a);
    CHECK(a.truth.model == PEAT_ERROR_MODEL_GARBAGE);
    for (int k = 0; k < a.truth.recorded; ++k) CHECK(std::abs(a.truth.changes[k].new_value) <= 1e-3);
  }
  // A constant is rounded to the dtype once (nearest even): 0.1 in f16.
  HostTensor h(f16(), {4});
  peat_inject_spec_t s;
  peat_inject_spec_init(&s, PEAT_INJECT_VALUE);
  s.value_kind = PEAT_VALUE_CONSTANT;
  s.value = 0.1;
  s.probability = 1.0;
  Applied a = run(s, h);
  require_truth(a);
  CHECK(a.after.word(0) == 0x2E66u);  // 0.1 -> 0x2E66 in binary16
}

namespace {
// Plain reference of region membership.
bool in_region(const peat_inject_spec_t& s, int64_t R, int64_t C, int64_t r, int64_t c) {
  const int64_t tgr = (R + s.tile_rows - 1) / s.tile_rows, tgc = (C + s.tile_cols - 1) / s.tile_cols;
  switch (s.region) {
    case PEAT_REGION_ROWS: return r >= s.first && r < s.first + s.extent;
    case PEAT_REGION_COLUMNS: return c >= s.first && c < s.first + s.extent;
    case PEAT_REGION_TILES: {
      const int64_t tile = (r / s.tile_rows) * tgc + c / s.tile_cols;
      return tile >= s.first && tile < s.first + s.extent;
    }
    case PEAT_REGION_LAST_TILE: return r / s.tile_rows == tgr - 1 && c / s.tile_cols == tgc - 1;
    case PEAT_REGION_REMAINDER: return r >= (R / s.tile_rows) * s.tile_rows || c >= (C / s.tile_cols) * s.tile_cols;
    default: return false;
  }
}
}  // namespace

TEST_CASE("region corruption: rows, columns, tiles, last tile, remainder", "[injector][models]") {
  for (DLDataType dtype : {f32(), bf16()}) {
    HostTensor x(dtype, {37, 45});
    x.fill_pattern(11);
    HostTensor stale(dtype, {37, 45});
    stale.fill_pattern(12);
    struct Case { peat_region_shape_t shape; int64_t first, extent; };
    const Case cases[] = {{PEAT_REGION_ROWS, 3, 4},   {PEAT_REGION_COLUMNS, 44, 1}, {PEAT_REGION_TILES, 2, 5},
                          {PEAT_REGION_TILES, 0, 9}, {PEAT_REGION_LAST_TILE, 0, 1}, {PEAT_REGION_REMAINDER, 0, 1}};
    for (const Case& c : cases) {
      for (peat_fill_t fill : {PEAT_FILL_ZEROS, PEAT_FILL_GARBAGE, PEAT_FILL_STALE}) {
        peat_inject_spec_t s;
        peat_inject_spec_init(&s, PEAT_INJECT_REGION);
        s.region = c.shape;
        s.first = c.first;
        s.extent = c.extent;
        s.tile_rows = 8;
        s.tile_cols = 16;
        s.fill = fill;
        s.stale = &stale.t;
        INFO("shape " << c.shape << " fill " << fill);
        Applied a = run(s, x);
        require_truth(a);
        CHECK(a.truth.model == PEAT_ERROR_MODEL_REGION);
        int64_t members = 0;
        for (int64_t i = 0; i < x.numel(); ++i) {
          const bool member = in_region(s, 37, 45, i / 45, i % 45);
          members += member;
          if (!member) {
            CHECK(a.after.word(i) == x.word(i));
          } else if (fill == PEAT_FILL_ZEROS) {
            CHECK(a.after.word(i) == 0);
          } else if (fill == PEAT_FILL_STALE) {
            CHECK(a.after.word(i) == stale.word(i));
          }
        }
        CHECK(a.truth.selected == members);
        if (fill == PEAT_FILL_GARBAGE) CHECK(a.truth.changed > members * 9 / 10);
      }
    }
  }
}

TEST_CASE("scaling, transposition, shift", "[injector][models]") {
  HostTensor x(f32(), {6, 10});
  x.fill_pattern(13);
  peat_inject_spec_t s;
  peat_inject_spec_init(&s, PEAT_INJECT_SCALE);
  s.alpha = 0.3;
  Applied a = run(s, x);
  require_truth(a);
  CHECK(a.truth.model == PEAT_ERROR_MODEL_SCALING);
  for (int64_t i = 0; i < x.numel(); ++i) CHECK(a.after.value(i) == static_cast<float>(0.3 * x.value(i)));

  peat_inject_spec_init(&s, PEAT_INJECT_TRANSPOSE);
  a = run(s, x);
  require_truth(a);
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 10; ++j) CHECK(a.after.word(j * 6 + i) == x.word(i * 10 + j));

  peat_inject_spec_init(&s, PEAT_INJECT_SHIFT);
  s.offset = -7;
  a = run(s, x);
  require_truth(a);
  for (int64_t k = 0; k < 60; ++k) CHECK(a.after.word(k) == (k + 7 < 60 ? x.word(k + 7) : 0u));
  s.offset = 5;
  s.fill = PEAT_FILL_KEEP;
  a = run(s, x);
  require_truth(a);
  for (int64_t k = 0; k < 60; ++k) CHECK(a.after.word(k) == (k >= 5 ? x.word(k - 5) : x.word(k)));
}

TEST_CASE("accumulation-order noise moves elements by at most k ULP", "[injector][models]") {
  for (DLDataType dtype : kAllTypes) {
    HostTensor x(dtype, {500});
    x.fill_pattern(17);
    const auto ordinal = [&](uint64_t w) {
      const uint64_t sign = uint64_t{1} << (dtype.bits - 1);
      const int64_t mag = static_cast<int64_t>(w & (sign - 1));
      return (w & sign) ? -mag : mag;
    };
    for (peat_ulp_distribution_t dist : {PEAT_ULP_UNIFORM, PEAT_ULP_FIXED, PEAT_ULP_NORMAL}) {
      peat_inject_spec_t s;
      peat_inject_spec_init(&s, PEAT_INJECT_ULP_NOISE);
      s.probability = 1.0;
      s.ulp = 3;
      s.distribution = dist;
      Applied a = run(s, x);
      require_truth(a);
      CHECK(a.truth.model == PEAT_ERROR_MODEL_ROUNDING);
      int64_t max_seen = 0;
      for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t d = ordinal(a.after.word(i)) - ordinal(x.word(i));
        max_seen = std::max(max_seen, std::abs(d));
        if (dist == PEAT_ULP_UNIFORM) CHECK((d != 0 && std::abs(d) <= 3));
        if (dist == PEAT_ULP_FIXED) CHECK(std::abs(d) == 3);
        if (dist == PEAT_ULP_NORMAL) CHECK(std::abs(d) <= 64 * 3);
      }
      CHECK(max_seen >= 3);
    }
  }
}

TEST_CASE("the ground truth keeps the first 64 changes and counts the rest", "[injector][models]") {
  HostTensor x(f64(), {300, 300});
  x.fill_pattern(19);
  peat_inject_spec_t s;
  peat_inject_spec_init(&s, PEAT_INJECT_STUCK_AT);
  s.bit = 62;
  s.stuck_value = 1;
  Applied a = run(s, x);
  require_truth(a);
  CHECK(a.truth.recorded == PEAT_INJECT_TRUTH_CAPACITY);
  CHECK(a.truth.changed > PEAT_INJECT_TRUTH_CAPACITY);
}

TEST_CASE("same spec, same bits: across runs and 1 vs 2 vs 4 threads", "[injector][models][determinism]") {
  HostTensor x(f32(), {512, 300});
  x.fill_pattern(23);
  std::vector<peat_inject_spec_t> specs;
  peat_inject_spec_t s;
  peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
  s.probability = 0.01;
  s.bits = 2;
  specs.push_back(s);
  peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
  s.count = 5000;
  specs.push_back(s);
  peat_inject_spec_init(&s, PEAT_INJECT_REGION);
  s.region = PEAT_REGION_TILES;
  s.extent = 40;
  s.fill = PEAT_FILL_GARBAGE;
  specs.push_back(s);
  peat_inject_spec_init(&s, PEAT_INJECT_ULP_NOISE);
  s.probability = 0.5;
  s.distribution = PEAT_ULP_NORMAL;
  specs.push_back(s);
  peat_inject_spec_init(&s, PEAT_INJECT_VALUE);
  s.value_kind = PEAT_VALUE_RANDOM;
  s.probability = 0.3;
  specs.push_back(s);
  for (const auto& spec : specs) {
    INFO("kind " << spec.kind);
    std::vector<Applied> results;
    for (int threads : {1, 2, 4, 2}) {
      tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
      results.push_back(run(spec, x, 99, 4, 5));
    }
    for (const Applied& r : results) {
      REQUIRE(r.status == PEAT_STATUS_OK);
      CHECK(r.after.bytes == results[0].after.bytes);
      CHECK(std::memcmp(&r.truth, &results[0].truth, sizeof(peat_inject_truth_t)) == 0);
    }
    require_truth(results[0]);
    // A different call index gives a different injection.
    Applied other = run(spec, x, 99, 4, 6);
    CHECK(other.after.bytes != results[0].after.bytes);
  }
}

TEST_CASE("strided views: indices are logical, storage is honoured", "[injector][models]") {
  // A 4 x 6 f32 matrix stored transposed (column-major): strides {1, 4}.
  HostTensor x(f32(), {4, 6});
  x.strides = {1, 4};
  x.rebind();
  x.fill_pattern(29);
  peat_inject_spec_t s;
  peat_inject_spec_init(&s, PEAT_INJECT_REGION);
  s.region = PEAT_REGION_ROWS;
  s.first = 1;
  s.extent = 1;
  Applied a = run(s, x);
  REQUIRE(a.status == PEAT_STATUS_OK);
  CHECK(a.truth.changed == 6);
  CHECK(a.truth.first_index == 6);
  CHECK(a.truth.last_index == 11);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 6; ++c) {
      const int64_t storage = r + 4 * c;
      CHECK(a.after.word(storage) == (r == 1 ? 0u : x.word(storage)));
    }
}

TEST_CASE("into an output tensor: the source is copied, then injected", "[injector][models]") {
  HostTensor src(bf16(), {3, 5});
  src.fill_pattern(31);
  HostTensor dst(bf16(), {3, 5});
  peat_inject_spec_t s;
  peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
  const int64_t e = 4;
  s.elements = &e;
  s.bit = 15;
  peat_inject_truth_t truth;
  peat_inject_truth_init(&truth);
  REQUIRE(peat_inject_apply(&s, &dst.t, &src.t, 1, 2, 3, &truth) == PEAT_STATUS_OK);
  for (int64_t i = 0; i < 15; ++i) CHECK(dst.word(i) == (i == 4 ? (src.word(i) ^ 0x8000u) : src.word(i)));
  CHECK(truth.changes[0].old_bits == src.word(4));
  // A refused spec leaves the destination as it was.
  HostTensor keep = dst;
  s.bit = 16;
  CHECK(peat_inject_apply(&s, &dst.t, &src.t, 1, 2, 3, &truth) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(dst.bytes == keep.bytes);
}

TEST_CASE("the CPU backend table's inject entry", "[injector][models][backend]") {
  peat_backend_t* cpu = nullptr;
  REQUIRE(peat_backend_get("cpu", &cpu) == PEAT_STATUS_OK);
  const peat_backend_api_t* api = peat_backend_table(cpu);
  REQUIRE(api->inject != nullptr);
  HostTensor x(f16(), {10});
  x.fill_pattern();
  HostTensor before = x;
  peat_inject_spec_t s;
  peat_inject_spec_init(&s, PEAT_INJECT_PRECISION);
  s.format = PEAT_FORMAT_FP8_E4M3;
  peat_inject_truth_t truth;
  peat_inject_truth_init(&truth);
  REQUIRE(api->inject(&x.t, &s, 1, 2, 3, &truth, nullptr) == PEAT_STATUS_OK);
  CHECK(check_truth(before, x, truth, 10) == "");
  s.format = 99;
  CHECK(api->inject(&x.t, &s, 1, 2, 3, &truth, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(std::string(api->last_error()).find("format") != std::string::npos);
  // The CPU table's entries share one barrier (lib/backend/cpu/cpu.hpp): the
  // message names the entry, as the C API's name their function.
  CHECK(std::string(api->last_error()).rfind("inject: ", 0) == 0);
}

TEST_CASE("bad specs are refused with a status and a message naming the field", "[injector][models][errors]") {
  HostTensor x(f16(), {4, 8});
  x.fill_pattern(41);
  peat_inject_spec_t s;
  const auto refuse = [&](peat_status_t want, const char* needle) {
    HostTensor copy = x;
    peat_inject_truth_t truth;
    peat_inject_truth_init(&truth);
    const peat_status_t got = peat_inject_apply(&s, &copy.t, nullptr, 1, 2, 3, &truth);
    INFO(peat_last_error_message());
    CHECK(got == want);
    CHECK(std::string(peat_last_error_message()).find(needle) != std::string::npos);
    CHECK(copy.bytes == x.bytes);
  };
  peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
  s.bit = 16;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.bit");
  s.bit = 14;
  s.bits = 3;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.bit");
  s.bit = -1;
  s.bits = 6;
  s.field = PEAT_BIT_FIELD_EXPONENT;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.bits");
  s.field = 7;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.field");
  peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
  s.count = 33;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.count");
  s.count = 0;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.count");
  s.count = 1;
  s.probability = 1.5;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.probability");
  s.probability = NAN;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.probability");
  s.probability = 0;
  const int64_t outside = 32;
  s.elements = &outside;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.elements[0]");
  peat_inject_spec_init(&s, PEAT_INJECT_STUCK_AT);
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.bit");  // no bit chosen
  s.bit = 20;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.bit");
  s.bit = 2;
  s.stuck_value = 2;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.stuck_value");
  s.stuck_value = 1;
  s.scope = PEAT_STUCK_LANE;
  s.lane = 32;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.lane");
  s.lane_period = 0;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.lane_period");
  peat_inject_spec_init(&s, PEAT_INJECT_REGION);
  s.first = 3;
  s.extent = 2;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "outside");
  s.region = PEAT_REGION_COLUMNS;
  s.first = 8;
  s.extent = 1;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "outside");
  s.region = PEAT_REGION_TILES;
  s.tile_rows = 2;
  s.tile_cols = 4;
  s.first = 3;
  s.extent = 2;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "tiles");
  s.first = INT64_MAX;
  s.extent = INT64_MAX;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "tiles");
  s.region = PEAT_REGION_ROWS;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "rows");
  s.region = PEAT_REGION_LAST_TILE;
  s.tile_rows = INT64_MAX;
  s.tile_cols = INT64_MAX;
  s.first = 0;
  s.extent = 1;
  {
    // A tile larger than the view: the last tile is the whole view.
    HostTensor copy = x;
    REQUIRE(peat_inject_apply(&s, &copy.t, nullptr, 1, 2, 3, nullptr) == PEAT_STATUS_OK);
    for (int64_t i = 0; i < copy.numel(); ++i) CHECK(copy.word(i) == 0);
  }
  s.tile_rows = 2;
  s.tile_cols = 4;
  s.region = PEAT_REGION_REMAINDER;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "no partial tile");
  s.region = 9;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.region");
  s.region = PEAT_REGION_ROWS;
  s.first = 0;
  s.extent = 1;
  s.fill = PEAT_FILL_STALE;
  s.stale = nullptr;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.stale");
  HostTensor wrong(f16(), {8, 4});
  s.stale = &wrong.t;
  refuse(PEAT_STATUS_SHAPE_MISMATCH, "spec.stale");
  HostTensor wrong_type(f32(), {4, 8});
  s.stale = &wrong_type.t;
  refuse(PEAT_STATUS_SHAPE_MISMATCH, "dtype");
  s.stale = nullptr;
  s.fill = PEAT_FILL_KEEP;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.fill");
  s.fill = PEAT_FILL_ZEROS;
  s.rows = 5;
  s.cols = 6;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.rows");
  s.rows = 5;
  s.cols = 0;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.rows");
  s.rows = -4;
  s.cols = -8;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.rows");
  s.rows = INT64_MAX / 2;
  s.cols = 4;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.rows");
  peat_inject_spec_init(&s, PEAT_INJECT_SHIFT);
  s.offset = 32;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.offset");
  s.offset = INT64_MIN;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.offset");
  peat_inject_spec_init(&s, PEAT_INJECT_SCALE);
  s.alpha = INFINITY;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.alpha");
  peat_inject_spec_init(&s, PEAT_INJECT_PRECISION);
  s.rounding = 5;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.rounding");
  peat_inject_spec_init(&s, PEAT_INJECT_ULP_NOISE);
  s.ulp = 0;
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.ulp");
  peat_inject_spec_init(&s, 42);
  refuse(PEAT_STATUS_INVALID_ARGUMENT, "spec.kind");
  peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
  s.struct_size = sizeof(peat_inject_spec_t) + 8;
  refuse(PEAT_STATUS_VERSION_MISMATCH, "struct_size");
  HostTensor ints(dt(kDLInt, 32), {4});
  peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
  CHECK(peat_inject_apply(&s, &ints.t, nullptr, 1, 2, 3, nullptr) == PEAT_STATUS_UNSUPPORTED);
  HostTensor other(f16(), {4, 9});
  CHECK(peat_inject_apply(&s, &x.t, &other.t, 1, 2, 3, nullptr) == PEAT_STATUS_SHAPE_MISMATCH);
}

TEST_CASE("empty tensors and an older, smaller spec", "[injector][models]") {
  HostTensor empty(f32(), {0, 4});
  peat_inject_spec_t s;
  peat_inject_spec_init(&s, PEAT_INJECT_SCALE);
  peat_inject_truth_t truth;
  peat_inject_truth_init(&truth);
  CHECK(peat_inject_apply(&s, &empty.t, nullptr, 1, 2, 3, &truth) == PEAT_STATUS_OK);
  CHECK(truth.changed == 0);
  CHECK(truth.first_index == -1);
  // A spec that ends after `probability` (an older header): defaults for the rest.
  HostTensor x(f32(), {16});
  x.fill_pattern();
  peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
  s.struct_size = offsetof(peat_inject_spec_t, bits);
  s.bits = 9;  // beyond struct_size: ignored, the default 1 applies
  Applied a = run(s, x);
  require_truth(a);
  CHECK(a.truth.changed == 1);
  CHECK(std::popcount(a.truth.changes[0].old_bits ^ a.truth.changes[0].new_bits) == 1);
  // A truth struct from an older header receives its leading part only.
  unsigned char buffer[sizeof(peat_inject_truth_t)];
  std::memset(buffer, 0xAB, sizeof buffer);
  peat_inject_truth_t* small = reinterpret_cast<peat_inject_truth_t*>(buffer);
  small->struct_size = offsetof(peat_inject_truth_t, bit_flips);
  HostTensor y = x;
  CHECK(peat_inject_apply(&s, &y.t, nullptr, 1, 2, 3, small) == PEAT_STATUS_OK);
  CHECK(small->changed == 1);
  CHECK(buffer[offsetof(peat_inject_truth_t, bit_flips)] == 0xAB);
}
