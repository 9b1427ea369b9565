// Fuzz target: peat_analyze / peat_analyze_accumulate and the Detector on
// arbitrary tensors (dtype code/bits/lanes, ndim, shape, strides, byte offset,
// data) and arbitrary configs, then peat_detect on the signature produced and
// on a signature whose every field comes from the input. The harness keeps to
// the C API's contract only where the library cannot check it: the data
// pointer must cover every element the shape and strides reach, so the buffer
// is sized from them; everything else is passed through unchecked.
#include "fuzz_input.hpp"

#include <peat/peat.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using peat::fuzz::Input;

constexpr int64_t kMaxSpan = 1 << 16;  // elements the strides may reach

struct FuzzTensor {
  std::vector<int64_t> shape, strides;
  std::vector<uint8_t> storage;
  DLTensor dl{};
};

// Builds a tensor; the buffer covers [min offset, max offset] of the strided
// view, and data points so that offset 0 is inside it.
void make_tensor(Input& in, FuzzTensor& t, const FuzzTensor* like) {
  const uint8_t codes[] = {kDLFloat, kDLBfloat, kDLInt, kDLUInt, kDLComplex};
  t.dl.dtype.code = codes[in.below(5)];
  const uint8_t bits[] = {16, 32, 64, 8, 0, 1, 128};
  t.dl.dtype.bits = in.below(8) < 6 ? bits[in.below(3)] : bits[in.below(7)];
  t.dl.dtype.lanes = in.below(16) == 0 ? static_cast<uint16_t>(in.below(4)) : 1;
  t.dl.device = {in.below(32) == 0 ? kDLCUDA : kDLCPU, 0};
  const int ndim = like ? like->dl.ndim : static_cast<int>(in.below(5));
  t.shape.resize(ndim);
  t.strides.resize(ndim);
  for (int d = 0; d < ndim; ++d) {
    if (like && in.below(8) != 0) {
      t.shape[d] = like->shape[d];
    } else {
      const int64_t raw = in.take<int8_t>();
      t.shape[d] = raw < -100 ? raw * 1000 : raw;  // mostly small, some negative
    }
  }
  const bool contiguous = in.below(2) == 0;
  int64_t expect = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    t.strides[d] = contiguous ? expect : static_cast<int64_t>(in.take<int8_t>());
    expect *= t.shape[d] > 0 ? t.shape[d] : 1;
  }
  t.dl.ndim = ndim;
  t.dl.shape = ndim ? t.shape.data() : nullptr;
  t.dl.strides = (ndim && in.below(3) != 0) ? t.strides.data() : nullptr;
  if (!t.dl.strides) {
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      t.strides[d] = s;
      s *= t.shape[d] > 0 ? t.shape[d] : 1;
    }
  }
  // Element span reached by the view (only meaningful for a valid shape).
  // A negative extent makes the tensor malformed: the library must reject it
  // before touching memory. A legal shape whose view reaches too far for a
  // quick run is made empty instead (extent 0 along dimension 0).
  bool valid = true;
  int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) {
    if (t.shape[d] < 0) valid = false;
    numel *= t.shape[d] < 0 ? 1 : t.shape[d];
    if (numel > kMaxSpan) numel = kMaxSpan + 1;
  }
  int64_t lo = 0, hi = 0;
  if (valid && numel > 0) {
    for (int d = 0; d < ndim; ++d) {
      const int64_t reach = (t.shape[d] - 1) * t.strides[d];
      (reach < 0 ? lo : hi) += reach;
    }
    if (numel > kMaxSpan || hi - lo > kMaxSpan) {
      t.shape[0] = 0;
      lo = hi = 0;
    }
  }
  const std::size_t elem = (static_cast<std::size_t>(t.dl.dtype.bits) * (t.dl.dtype.lanes ? t.dl.dtype.lanes : 1) + 7) / 8;
  const std::size_t elems = valid ? static_cast<std::size_t>(hi - lo + 1) : 1;
  const std::size_t offset_elems = in.below(4);
  t.storage.assign((elems + offset_elems) * (elem ? elem : 1) + 16, 0);
  const std::vector<uint8_t> fill = in.bytes(t.storage.size());
  if (!fill.empty()) std::memcpy(t.storage.data(), fill.data(), fill.size());
  if (!valid && ndim > 0) {
    // A shape the library must reject: give it no reachable memory beyond one element.
    t.dl.data = t.storage.data();
    t.dl.byte_offset = 0;
    return;
  }
  t.dl.byte_offset = offset_elems * elem;
  t.dl.data = t.storage.data() + static_cast<std::size_t>(-lo) * elem;
}

void fill_config(Input& in, peat_signature_config_t& c) {
  peat_signature_config_init(&c);
  const uint8_t mask = in.byte();
  auto pick_double = [&](double def) -> double {
    switch (in.below(6)) {
      case 0: return def;
      case 1: return -1.0;
      case 2: return NAN;
      case 3: return INFINITY;
      case 4: return 0.0;
      default: return in.take<double>();
    }
  };
  if (mask & 1) c.rtol = pick_double(c.rtol), c.atol = pick_double(c.atol);
  if (mask & 2) c.reduction_length = in.take<int16_t>();
  if (mask & 4) c.unit_roundoff = pick_double(c.unit_roundoff), c.ratio_min_abs = pick_double(c.ratio_min_abs);
  if (mask & 8) c.index_base = in.take<int16_t>();
  if (mask & 16) c.spatial_rows = in.take<int8_t>(), c.spatial_cols = in.take<int8_t>();
  if (mask & 32) c.tile_rows = in.take<int8_t>(), c.tile_cols = in.take<int8_t>();
  if (mask & 64) c.map_mismatch = in.take<int8_t>();
  c.num_threads = 1 + static_cast<int32_t>(in.below(2));  // serial or two threads
  if (mask & 128) c.struct_size = in.take<uint32_t>();
}

void check(peat_status_t status) {
  if (status != PEAT_STATUS_OK && peat_last_error_message()[0] == '\0') {
    std::fprintf(stderr, "status %s without a message\n", peat_status_string(status));
    std::abort();
  }
}

void detect(Input& in, const peat_signature_t& sig, const peat_spatial_map_t* map) {
  peat_detect_context_t ctx;
  peat_detect_context_init(&ctx);
  const uint8_t mask = in.byte();
  if (mask & 1) ctx.op_kind = in.take<int8_t>();
  if (mask & 2) ctx.reduction_length = in.take<int16_t>();
  if (mask & 4) ctx.unit_roundoff = in.take<double>();
  if (mask & 8) ctx.rounding_slack = in.take<double>();
  if (mask & 16) ctx.map = map;
  if (mask & 32) ctx.rerun = &sig;
  if (mask & 64) ctx.reference = &sig;
  peat_detection_t det;
  peat_detection_init(&det);
  const peat_status_t st = peat_detect(&sig, &ctx, &det);
  check(st);
  if (st == PEAT_STATUS_OK) {
    if (det.verdict_count < 1 || det.verdict_count > PEAT_DETECT_MAX_VERDICTS) std::abort();
    std::size_t len = 0;
    check(peat_detection_render(&det, static_cast<peat_render_format_t>(in.below(4)), nullptr, 0, &len));
    std::vector<char> text(len + 1);
    check(peat_detection_render(&det, static_cast<peat_render_format_t>(in.below(3)), text.data(), text.size(), &len));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  Input in(data, size);
  const uint8_t mode = in.byte();
  if (mode % 4 == 3) {
    // An arbitrary signature straight into the Detector: its consistency checks.
    peat_signature_t sig;
    peat_signature_init(&sig);
    const std::vector<uint8_t> raw = in.bytes(sizeof sig - 4);
    if (!raw.empty()) std::memcpy(reinterpret_cast<uint8_t*>(&sig) + 4, raw.data(), raw.size());
    detect(in, sig, nullptr);
    double v = 0;
    int32_t pass = 0;
    check(peat_signature_rmse(&sig, &v));
    check(peat_signature_sqnr_db(&sig, &v));
    check(peat_signature_cosine(&sig, &v));
    check(peat_signature_allclose(&sig, &pass));
    return 0;
  }
  FuzzTensor golden, candidate;
  make_tensor(in, golden, nullptr);
  make_tensor(in, candidate, &golden);
  peat_signature_config_t config;
  fill_config(in, config);
  peat_signature_t sig;
  peat_signature_init(&sig);
  peat_spatial_map_t map;
  peat_spatial_map_init(&map);
  peat_spatial_map_t* out_map = (mode & 4) ? &map : nullptr;
  int64_t rows = 0, cols = 0, tiles = 0;
  check(peat_spatial_map_shape(&golden.dl, &config, &rows, &cols, &tiles));
  peat_status_t st = (mode % 4 == 1) ? peat_analyze_accumulate(&golden.dl, &candidate.dl, &config, &sig, out_map)
                                     : peat_analyze(&golden.dl, &candidate.dl, &config, &sig, out_map);
  check(st);
  if (st == PEAT_STATUS_OK) {
    if (mode % 4 == 2) {
      peat_signature_t twice = sig;
      check(peat_signature_merge(&twice, &sig));
    }
    detect(in, sig, out_map);
  }
  peat_spatial_map_release(&map);
  return 0;
}
