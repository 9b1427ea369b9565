// Playback FI: replays of recorded GEMM invocations through candidates,
// checked against plainly computed expectations.
#include <catch2/catch.hpp>

#include <peat/peat.h>

#include "core/error.hpp"
#include "injector/kernel_symbol.hpp"
#include "playback/playback.hpp"
#include "trace/reader.hpp"
#include "trace/record.hpp"
#include "trace/writer.hpp"
#include "trace_test_util.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <fnmatch.h>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace peat::impl::trace;

namespace {

constexpr int64_t M = 33, N = 40, K = 24;  // M, N not multiples of 32 (edge tiles)

// Plain sequential fp32 GEMM: C[M x N] = A[M x K] * B[K x N], row-major compact
// (the layout playback hands over: compact row-major tensors).
int32_t seq_kernel(void*, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out, const void*) {
  if (n_in != 2 || n_out != 1) return 1;
  const int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  const float* a = static_cast<const float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  float* c = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        const volatile float prod = a[i * k + p] * b[p * n + j];  // no contraction
        acc += prod;
      }
      c[i * n + j] = acc;
    }
  return 0;
}

TensorData tensor(const char* name, int64_t rows, int64_t cols, const std::vector<float>& values) {
  TensorData t;
  t.name = name;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = {rows, cols};
  t.bytes.resize(values.size() * sizeof(float));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

struct Spec {
  std::string op, layer;
  int64_t step;
  peat_phase_t phase;
};

// Records one GEMM per spec (inputs random, output from `golden`), with step
// markers and a scalar in between (non-op records playback must skip).
std::vector<OpData> make_trace(const std::string& path, const std::vector<Spec>& specs, peat_kernel_fn golden) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Writer w(path, RunInfoData{});
  std::vector<OpData> ops;
  uint64_t call = 0;
  for (const Spec& s : specs) {
    std::vector<float> a(M * K), b(K * N), c(M * N, 0.0f);
    for (auto& v : a) v = dist(rng);
    for (auto& v : b) v = dist(rng);
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
    DLTensor in[2]{}, out{};
    in[0].data = a.data(); in[0].ndim = 2; in[0].shape = sa; in[0].dtype = {kDLFloat, 32, 1}; in[0].device = {kDLCPU, 0};
    in[1].data = b.data(); in[1].ndim = 2; in[1].shape = sb; in[1].dtype = {kDLFloat, 32, 1}; in[1].device = {kDLCPU, 0};
    out.data = c.data(); out.ndim = 2; out.shape = sc; out.dtype = {kDLFloat, 32, 1}; out.device = {kDLCPU, 0};
    REQUIRE(golden(nullptr, in, 2, &out, 1, nullptr) == 0);
    OpData op;
    op.op = s.op;
    op.module_path = s.layer;
    op.step = s.step;
    op.phase = s.phase;
    op.call_index = call++;
    AttrData alpha;
    alpha.key = "alpha";
    alpha.type = PEAT_ATTR_FLOAT;
    alpha.f = 1.0;
    op.attrs.push_back(alpha);
    op.inputs = {tensor("a", M, K, a), tensor("b", K, N, b)};
    op.outputs = {tensor("c", M, N, c)};
    w.append(encode_record(StepData{s.step, 0}, PEAT_TRACE_CODEC_RAW, 1));
    w.append(encode_record(op, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1));
    w.append(encode_record(ScalarData{"loss", s.step, 0.5}, PEAT_TRACE_CODEC_RAW, 1));
    ops.push_back(std::move(op));
  }
  w.close();
  return ops;
}

std::vector<Spec> default_specs() {
  std::vector<Spec> specs;
  for (int64_t step = 0; step < 4; ++step) {
    specs.push_back({"matmul", "fc1", step, PEAT_PHASE_FORWARD});
    specs.push_back({"matmul", "fc2", step, PEAT_PHASE_FORWARD});
    specs.push_back({"matmul_grad", "fc1", step, PEAT_PHASE_BACKWARD});
  }
  return specs;
}

peat_trace_reader_options_t reader_options() {
  peat_trace_reader_options_t o;
  peat_trace_reader_options_init(&o);
  return o;
}

peat_playback_options_t options(bool thread_safe = false, bool twice = false) {
  peat_playback_options_t o;
  peat_playback_options_init(&o);
  o.thread_safe = thread_safe ? 1 : 0;
  o.run_twice = twice ? 1 : 0;
  o.attrs_mode = PEAT_PLAYBACK_ATTRS_NULL;
  return o;
}

// Flips the lowest bit of element 0 on every second call: deterministic
// inputs, non-deterministic output.
int32_t flaky_kernel(void* ctx, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out, const void* attrs) {
  const int32_t rc = seq_kernel(nullptr, in, n_in, out, n_out, attrs);
  auto* calls = static_cast<std::atomic<uint64_t>*>(ctx);
  if (calls->fetch_add(1) % 2 == 1) {
    uint32_t bits;
    std::memcpy(&bits, out[0].data, 4);
    bits ^= 1u;
    std::memcpy(out[0].data, &bits, 4);
  }
  return rc;
}

}  // namespace

TEST_CASE("playback: golden kernel against itself gives exact signatures for every record", "[playback]") {
  peat_test::TempDir dir;
  const auto path = dir.file("t.peat");
  const auto ops = make_trace(path, default_specs(), seq_kernel);
  Reader reader(path, reader_options(), false);
  for (const bool pipelined : {false, true}) {
    peat::impl::playback::Playback pb(reader, options(pipelined));
    pb.set_candidate(seq_kernel, nullptr, "seq");
    REQUIRE(pb.run() == PEAT_STATUS_OK);
    const auto& s = pb.summary();
    CHECK(s.selected == ops.size());
    CHECK(s.done == ops.size());
    CHECK(s.ok == ops.size());
    CHECK(s.exact == ops.size());
    CHECK(s.mismatched == 0);
    REQUIRE(pb.results().size() == ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const auto& r = pb.results()[i];
      CHECK(r.status == PEAT_STATUS_OK);
      CHECK(r.record == 3 * i + 1);  // step marker, op, scalar per spec
      CHECK(r.op == ops[i].op);
      CHECK(r.module_path == ops[i].module_path);
      CHECK(r.step == ops[i].step);
      CHECK(r.call_index == ops[i].call_index);
      const auto& sig = pb.result_signature(i, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN);
      CHECK(sig.count == uint64_t(M * N));
      CHECK(sig.bitwise_mismatch_count == 0);
      CHECK(sig.value_mismatch_count == 0);
      CHECK(sig.max_abs_error == 0.0);
    }
    REQUIRE(pb.group_count(PEAT_PLAYBACK_BY_OP) == 2);
    CHECK(pb.group(PEAT_PLAYBACK_BY_OP, 0).name == "matmul");
    CHECK(pb.group(PEAT_PLAYBACK_BY_OP, 0).records == 8);
    CHECK(pb.group(PEAT_PLAYBACK_BY_OP, 1).records == 4);
    CHECK(pb.group_signature(PEAT_PLAYBACK_BY_OP, 0, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN).count == uint64_t(8 * M * N));
    REQUIRE(pb.group_count(PEAT_PLAYBACK_BY_LAYER) == 2);
    CHECK(pb.group(PEAT_PLAYBACK_BY_LAYER, 0).name == "fc1");
    CHECK(pb.group(PEAT_PLAYBACK_BY_LAYER, 0).records == 8);
    CHECK(pb.group(PEAT_PLAYBACK_BY_LAYER, 0).exact == 8);
    CHECK(pb.group_signature(PEAT_PLAYBACK_BY_LAYER, 1, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN).bitwise_mismatch_count == 0);
  }
}

TEST_CASE("playback: filter selects by op glob, step range and phase", "[playback]") {
  peat_test::TempDir dir;
  const auto path = dir.file("t.peat");
  const auto ops = make_trace(path, default_specs(), seq_kernel);
  Reader reader(path, reader_options(), false);
  const auto count_plain = [&](const char* glob, int64_t lo, int64_t hi, int32_t phase) {
    uint64_t n = 0;
    for (const auto& op : ops)
      if ((!glob || ::fnmatch(glob, op.op.c_str(), 0) == 0) && op.step >= lo && op.step <= hi &&
          (phase < 0 || op.phase == phase))
        ++n;
    return n;
  };
  struct Case { const char* glob; int64_t lo, hi; int32_t phase; };
  for (const Case c : {Case{"matmul", INT64_MIN, INT64_MAX, -1}, Case{"matmul*", 1, 2, -1},
                       Case{nullptr, 3, 3, PEAT_PHASE_BACKWARD}, Case{"*grad", INT64_MIN, INT64_MAX, PEAT_PHASE_FORWARD},
                       Case{"loss", INT64_MIN, INT64_MAX, -1}}) {
    peat_trace_filter_t f;
    peat_trace_filter_init(&f);
    f.op_glob = c.glob;
    f.step_min = c.lo;
    f.step_max = c.hi;
    f.phase = c.phase;
    auto o = options();
    o.filter = &f;
    peat::impl::playback::Playback pb(reader, o);
    pb.set_candidate(seq_kernel, nullptr, "seq");
    REQUIRE(pb.run() == PEAT_STATUS_OK);
    const uint64_t expected = count_plain(c.glob, c.lo, c.hi, c.phase);
    CHECK(pb.summary().selected == expected);
    CHECK(pb.results().size() == expected);
    for (const auto& r : pb.results()) {
      if (c.glob) CHECK(::fnmatch(c.glob, r.op.c_str(), 0) == 0);
      CHECK(r.step >= c.lo);
      CHECK(r.step <= c.hi);
    }
  }
  // "loss" names only scalar records: nothing is replayed.
  peat_trace_filter_t f;
  peat_trace_filter_init(&f);
  f.kinds = 1u << PEAT_TRACE_KIND_SCALAR;
  auto o = options();
  o.filter = &f;
  CHECK_THROWS_AS(peat::impl::playback::Playback(reader, o), peat::impl::Error);
}

TEST_CASE("playback: run twice finds non-determinism and keeps both signatures", "[playback]") {
  peat_test::TempDir dir;
  const auto path = dir.file("t.peat");
  const auto ops = make_trace(path, default_specs(), seq_kernel);
  Reader reader(path, reader_options(), false);
  {  // deterministic candidate: both runs equal
    peat::impl::playback::Playback pb(reader, options(false, true));
    pb.set_candidate(seq_kernel, nullptr, "seq");
    REQUIRE(pb.run() == PEAT_STATUS_OK);
    CHECK(pb.summary().nondeterministic == 0);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      CHECK(pb.results()[i].deterministic == 1);
      CHECK(pb.result_signature(i, 0, PEAT_PLAYBACK_SECOND_VS_FIRST).bitwise_mismatch_count == 0);
    }
  }
  std::atomic<uint64_t> calls{0};
  peat::impl::playback::Playback pb(reader, options(false, true));
  pb.set_candidate(flaky_kernel, &calls, "flaky");
  REQUIRE(pb.run() == PEAT_STATUS_OK);
  CHECK(calls.load() == 2 * ops.size());
  CHECK(pb.summary().nondeterministic == ops.size());
  CHECK(pb.summary().exact == ops.size());  // the first run is the golden kernel's
  for (std::size_t i = 0; i < ops.size(); ++i) {
    CHECK(pb.results()[i].deterministic == 0);
    CHECK(pb.result_signature(i, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN).bitwise_mismatch_count == 0);
    const auto& second = pb.result_signature(i, 0, PEAT_PLAYBACK_SECOND_VS_GOLDEN);
    CHECK(second.bitwise_mismatch_count == 1);
    CHECK(second.xor_bit_hist[0] == 1);
    const auto& repeat = pb.result_signature(i, 0, PEAT_PLAYBACK_SECOND_VS_FIRST);
    CHECK(repeat.bitwise_mismatch_count == 1);
    CHECK(repeat.max_abs_error_index == 0);
  }
  CHECK(pb.group(PEAT_PLAYBACK_BY_OP, 0).nondeterministic == 8);
  CHECK(pb.group_signature(PEAT_PLAYBACK_BY_OP, 0, 0, PEAT_PLAYBACK_SECOND_VS_FIRST).bitwise_mismatch_count == 8);
  // Without run_twice the second comparisons do not exist.
  peat::impl::playback::Playback once(reader, options());
  once.set_candidate(seq_kernel, nullptr, "seq");
  REQUIRE(once.run() == PEAT_STATUS_OK);
  CHECK(once.results()[0].deterministic == -1);
  CHECK_THROWS_AS(once.result_signature(0, 0, PEAT_PLAYBACK_SECOND_VS_FIRST), peat::impl::Error);
}

namespace {
int progress_stop_at_3(void* user, uint64_t done, uint64_t total) {
  auto* seen = static_cast<std::vector<std::pair<uint64_t, uint64_t>>*>(user);
  seen->emplace_back(done, total);
  return done == 3 ? 1 : 0;
}

// Leaves output 0 with one dimension (shape [M*N]) on odd call indices.
int32_t reshaping_kernel(void*, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out, const void* attrs) {
  static thread_local int64_t flat[1];
  const int32_t rc = seq_kernel(nullptr, in, n_in, out, n_out, attrs);
  const auto* a = static_cast<const peat_playback_attrs_t*>(attrs);
  if (a->call_index % 2 == 1) {
    flat[0] = out[0].shape[0] * out[0].shape[1];
    out[0].ndim = 1;
    out[0].shape = flat;
  }
  return rc;
}

// Fails (returns 7) on step 2.
int32_t failing_kernel(void*, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out, const void* attrs) {
  const auto* a = static_cast<const peat_playback_attrs_t*>(attrs);
  if (a->step == 2) return 7;
  return seq_kernel(nullptr, in, n_in, out, n_out, attrs);
}

// Uses the recorded attributes: scales by "alpha" (recorded as 1.0) and checks the list.
int32_t attrs_kernel(void*, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out, const void* attrs) {
  const auto* a = static_cast<const peat_playback_attrs_t*>(attrs);
  if (a == nullptr || a->struct_size != sizeof(peat_playback_attrs_t) || a->n_attrs != 1) return 2;
  if (std::strcmp(a->attrs[0].key, "alpha") != 0 || a->attrs[0].type != PEAT_ATTR_FLOAT) return 3;
  if (a->op == nullptr || std::strncmp(a->op, "matmul", 6) != 0 || a->run != 0) return 4;
  const int32_t rc = seq_kernel(nullptr, in, n_in, out, n_out, attrs);
  float* c = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < M * N; ++i) c[i] *= static_cast<float>(a->attrs[0].f);
  return rc;
}
}  // namespace

TEST_CASE("playback: the progress callback sees every record and can cancel", "[playback]") {
  peat_test::TempDir dir;
  const auto path = dir.file("t.peat");
  const auto ops = make_trace(path, default_specs(), seq_kernel);
  Reader reader(path, reader_options(), false);
  for (const bool pipelined : {false, true}) {
    std::vector<std::pair<uint64_t, uint64_t>> seen;
    auto o = options(pipelined);
    o.progress = progress_stop_at_3;
    o.progress_user = &seen;
    peat::impl::playback::Playback pb(reader, o);
    pb.set_candidate(seq_kernel, nullptr, "seq");
    try {
      pb.run();
      FAIL("run was not cancelled");
    } catch (const peat::impl::Error& e) {
      CHECK(e.status() == PEAT_STATUS_CANCELLED);
      CHECK(std::string(e.what()).find("after 3 of 12") != std::string::npos);
    }
    CHECK(pb.summary().cancelled);
    CHECK(pb.summary().done == 3);
    CHECK(pb.results().size() == 3);
    REQUIRE(seen.size() == 3);
    for (uint64_t i = 0; i < 3; ++i) CHECK(seen[i] == std::make_pair(i + 1, uint64_t(ops.size())));
  }
}

TEST_CASE("playback: failing candidates and wrong output shapes are reported per record", "[playback]") {
  peat_test::TempDir dir;
  const auto path = dir.file("t.peat");
  const auto ops = make_trace(path, default_specs(), seq_kernel);
  Reader reader(path, reader_options(), false);
  for (const bool pipelined : {false, true}) {
    auto o = options(pipelined);
    o.attrs_mode = PEAT_PLAYBACK_ATTRS_LIST;
    peat::impl::playback::Playback pb(reader, o);
    pb.set_candidate(reshaping_kernel, nullptr, "reshaping");
    REQUIRE(pb.run() == PEAT_STATUS_OK);
    CHECK(pb.summary().done == ops.size());
    CHECK(pb.summary().failed == ops.size() / 2);
    CHECK(pb.summary().exact == ops.size() / 2);
    for (const auto& r : pb.results()) {
      if (r.call_index % 2 == 1) {
        CHECK(r.status == PEAT_STATUS_SHAPE_MISMATCH);
        CHECK(r.message.find(path) != std::string::npos);
        CHECK(r.message.find("record " + std::to_string(r.record)) != std::string::npos);
        CHECK(r.message.find("'" + r.op + "'") != std::string::npos);
        CHECK(r.message.find("[1320]") != std::string::npos);
        CHECK(r.message.find("[33, 40]") != std::string::npos);
        CHECK_THROWS_AS(pb.result_signature(&r - pb.results().data(), 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN), peat::impl::Error);
      } else {
        CHECK(r.status == PEAT_STATUS_OK);
      }
    }
    CHECK(pb.group(PEAT_PLAYBACK_BY_OP, 0).failed == 4);

    peat::impl::playback::Playback failing(reader, o);
    failing.set_candidate(failing_kernel, nullptr, "failing");
    REQUIRE(failing.run() == PEAT_STATUS_OK);
    CHECK(failing.summary().failed == 3);
    for (const auto& r : failing.results()) {
      CHECK(r.status == (r.step == 2 ? PEAT_STATUS_CALLBACK_FAILED : PEAT_STATUS_OK));
      if (r.step == 2) CHECK(r.message.find("returned 7") != std::string::npos);
    }
  }
}

TEST_CASE("playback: the candidate receives the recorded attributes", "[playback]") {
  peat_test::TempDir dir;
  const auto path = dir.file("t.peat");
  make_trace(path, default_specs(), seq_kernel);
  Reader reader(path, reader_options(), false);
  peat_trace_filter_t f;
  peat_trace_filter_init(&f);
  f.op_glob = "matmul*";
  auto o = options();
  o.attrs_mode = PEAT_PLAYBACK_ATTRS_LIST;
  o.filter = &f;
  peat::impl::playback::Playback pb(reader, o);
  pb.set_candidate(attrs_kernel, nullptr, "attrs");
  REQUIRE(pb.run() == PEAT_STATUS_OK);
  CHECK(pb.summary().exact == 12);
  // NULL mode: the kernel sees no attributes and fails with 2.
  o.attrs_mode = PEAT_PLAYBACK_ATTRS_NULL;
  peat::impl::playback::Playback none(reader, o);
  none.set_candidate(attrs_kernel, nullptr, "attrs");
  REQUIRE(none.run() == PEAT_STATUS_OK);
  CHECK(none.summary().failed == 12);
}

TEST_CASE("playback: candidate symbols that cannot be loaded", "[playback]") {
  peat_test::TempDir dir;
  const auto path = dir.file("t.peat");
  make_trace(path, {{"matmul", "fc1", 0, PEAT_PHASE_FORWARD}}, seq_kernel);
  Reader reader(path, reader_options(), false);
  peat::impl::playback::Playback pb(reader, options());
  const auto status_of = [&](const std::string& spec) -> peat_status_t {
    try {
      pb.set_candidate_symbol(spec, nullptr);
    } catch (const peat::impl::Error& e) {
      return e.status();
    }
    return PEAT_STATUS_OK;
  };
  CHECK(status_of("/nonexistent/libnothing.so:fn") == PEAT_STATUS_NOT_FOUND);
  CHECK(status_of("no-colon") == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(status_of("libx.so:") == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(status_of("libc.so.6:peat_no_such_symbol_anywhere") == PEAT_STATUS_NOT_FOUND);
  CHECK_THROWS_AS(pb.run(), peat::impl::Error);  // no candidate yet: BAD_STATE
  try {
    pb.run();
  } catch (const peat::impl::Error& e) {
    CHECK(e.status() == PEAT_STATUS_BAD_STATE);
  }
}

TEST_CASE("playback: JSON lines hold every record and group", "[playback]") {
  peat_test::TempDir dir;
  const auto path = dir.file("t.peat");
  const auto ops = make_trace(path, default_specs(), seq_kernel);
  Reader reader(path, reader_options(), false);
  std::atomic<uint64_t> calls{0};
  peat::impl::playback::Playback pb(reader, options(false, true));
  pb.set_candidate(flaky_kernel, &calls, "flaky");
  REQUIRE(pb.run() == PEAT_STATUS_OK);
  const auto out = dir.file("r.jsonl");
  pb.write_jsonl(out, false);
  pb.write_jsonl(out, true);
  std::ifstream in(out);
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  const std::size_t per_write = ops.size() + 2 + 2;  // records, 2 ops, 2 layers
  REQUIRE(lines.size() == 2 * per_write);
  CHECK(lines[0]["type"] == "record");
  CHECK(lines[0]["op"] == "matmul");
  CHECK(lines[0]["status"] == "ok");
  CHECK(lines[0]["deterministic"] == 0);
  CHECK(lines[0]["outputs"][0]["elements"] == M * N);
  CHECK(lines[0]["outputs"][0]["repeat_mismatches"] == 1);
  CHECK(lines[ops.size()]["type"] == "op");
  CHECK(lines[ops.size()]["name"] == "matmul");
  CHECK(lines[ops.size()]["records"] == 8);
  CHECK(lines[ops.size()]["outputs"][0]["repeat_mismatches"] == 8);
  CHECK(lines[ops.size() + 2]["type"] == "layer");
  CHECK_THROWS_AS(pb.write_jsonl(dir.file("missing/r.jsonl"), false), peat::impl::Error);
}

#ifdef PEAT_CANDIDATES_LIBRARY
namespace {
peat_kernel_fn library_kernel(const std::string& symbol) {
  static std::vector<void*> keep;  // open for the whole test program
  auto k = peat::impl::injector::load_kernel_symbol(std::string(PEAT_CANDIDATES_LIBRARY) + ":" + symbol);
  keep.push_back(k.library);
  return k.fn;
}
}  // namespace

TEST_CASE("playback: known-defect candidates from libpeat_candidates.so give the expected counts", "[playback]") {
  peat_test::TempDir dir;
  const auto path = dir.file("t.peat");
  const auto ops = make_trace(path, default_specs(), library_kernel("peat_gemm_sequential_kernel"));
  Reader reader(path, reader_options(), false);
  const std::string lib = PEAT_CANDIDATES_LIBRARY;

  {  // the reference against itself, loaded by symbol: exact
    peat::impl::playback::Playback pb(reader, options(true));
    pb.set_candidate_symbol(lib + ":peat_gemm_sequential_kernel", nullptr);
    REQUIRE(pb.run() == PEAT_STATUS_OK);
    CHECK(pb.summary().exact == ops.size());
  }
  {  // tile_drop: everything outside the full 32x32 tiles stays zero
    peat::impl::playback::Playback pb(reader, options(true));
    pb.set_candidate_symbol(lib + ":peat_cand_tile_drop_kernel", nullptr);
    REQUIRE(pb.run() == PEAT_STATUS_OK);
    const uint64_t dropped = M * N - (M / 32 * 32) * (N / 32 * 32);  // 296
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const auto& s = pb.result_signature(i, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN);
      CHECK(s.bitwise_mismatch_count == dropped);
      CHECK(s.dropped_count == dropped);
    }
    CHECK(pb.group_signature(PEAT_PLAYBACK_BY_OP, 0, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN).dropped_count == 8 * dropped);
    CHECK(pb.group_signature(PEAT_PLAYBACK_BY_LAYER, 1, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN).dropped_count == 4 * dropped);
  }
  {  // stuck bit 27 on every 32nd lane: mismatches where golden had that bit clear
    peat::impl::playback::Playback pb(reader, options(false));
    pb.set_candidate_symbol(lib + ":peat_cand_stuck_bit27_kernel", nullptr);
    REQUIRE(pb.run() == PEAT_STATUS_OK);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const auto& golden = ops[i].outputs[0].bytes;
      uint64_t expected = 0;
      for (int64_t e = 0; e < M * N; e += 32) {
        uint32_t w;
        std::memcpy(&w, golden.data() + 4 * e, 4);
        if ((w & (1u << 27)) == 0) ++expected;
      }
      const auto& s = pb.result_signature(i, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN);
      CHECK(s.bitwise_mismatch_count == expected);
      CHECK(s.xor_bit_hist[27] == expected);
      CHECK(s.xor_popcount_hist[1] == expected);
    }
  }
}

TEST_CASE("playback: pipelined and serial playback give identical results", "[playback]") {
  peat_test::TempDir dir;
  const auto path = dir.file("t.peat");
  std::vector<Spec> specs;
  for (int64_t step = 0; step < 12; ++step) specs.push_back({"matmul", step % 2 ? "a" : "b", step, PEAT_PHASE_FORWARD});
  const auto ops = make_trace(path, specs, library_kernel("peat_gemm_sequential_kernel"));
  Reader reader(path, reader_options(), false);
  const std::string spec = std::string(PEAT_CANDIDATES_LIBRARY) + ":peat_cand_bf16_kernel";
  peat::impl::playback::Playback serial(reader, options(false, true));
  serial.set_candidate_symbol(spec, nullptr);
  REQUIRE(serial.run() == PEAT_STATUS_OK);
  auto po = options(true, true);
  po.num_threads = 2;
  po.max_in_flight = 3;
  peat::impl::playback::Playback piped(reader, po);
  piped.set_candidate_symbol(spec, nullptr);
  REQUIRE(piped.run() == PEAT_STATUS_OK);
  REQUIRE(serial.results().size() == ops.size());
  REQUIRE(piped.results().size() == ops.size());
  CHECK(serial.summary().mismatched == ops.size());  // bf16 inputs: every record differs
  for (std::size_t i = 0; i < ops.size(); ++i) {
    CHECK(serial.results()[i].record == piped.results()[i].record);
    CHECK(serial.results()[i].bitwise_mismatches == piped.results()[i].bitwise_mismatches);
    for (const auto w : {PEAT_PLAYBACK_FIRST_VS_GOLDEN, PEAT_PLAYBACK_SECOND_VS_GOLDEN, PEAT_PLAYBACK_SECOND_VS_FIRST})
      CHECK(std::memcmp(&serial.result_signature(i, 0, w), &piped.result_signature(i, 0, w), sizeof(peat_signature_t)) == 0);
  }
  for (uint64_t g = 0; g < 2; ++g) {
    const auto a = serial.group_signature(PEAT_PLAYBACK_BY_LAYER, g, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN);
    const auto b = piped.group_signature(PEAT_PLAYBACK_BY_LAYER, g, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN);
    CHECK(std::memcmp(&a, &b, sizeof(a)) == 0);
    CHECK(a.count == uint64_t(6 * M * N));
  }
}
#endif

TEST_CASE("playback: a record whose tensors cannot be loaded is reported and playback goes on", "[playback]") {
  peat_test::TempDir dir;
  const auto path = dir.file("t.peat");
  const auto ops = make_trace(path, default_specs(), seq_kernel);
  // Input A (M x K floats = 3168 bytes) exceeds this limit.
  auto ro = reader_options();
  ro.max_tensor_bytes = 3000;
  Reader reader(path, ro, false);
  for (const bool pipelined : {false, true}) {
    peat::impl::playback::Playback pb(reader, options(pipelined));
    pb.set_candidate(seq_kernel, nullptr, "seq");
    REQUIRE(pb.run() == PEAT_STATUS_OK);
    CHECK(pb.summary().done == ops.size());
    CHECK(pb.summary().failed == ops.size());
    for (const auto& r : pb.results()) {
      CHECK(r.status == PEAT_STATUS_OUT_OF_MEMORY);
      CHECK(r.message.find(path + ": record " + std::to_string(r.record) + " (op '" + r.op + "')") != std::string::npos);
      CHECK(r.message.find("max_tensor_bytes") != std::string::npos);
    }
    CHECK(pb.group(PEAT_PLAYBACK_BY_OP, 0).failed == 8);
    CHECK(pb.group(PEAT_PLAYBACK_BY_OP, 0).n_outputs == 0);
  }
}

TEST_CASE("playback: a damaged tensor payload fails its record only", "[playback]") {
  peat_test::TempDir dir;
  const auto path = dir.file("t.peat");
  const auto ops = make_trace(path, default_specs(), seq_kernel);
  const uint64_t damaged = 4;  // the second op record
  uint64_t at = 0;
  {  // a byte 100 bytes before the frame's end: inside the last tensor's payload (the golden output)
    peat_trace_reader_t* clean = nullptr;
    REQUIRE(peat_trace_open(path.c_str(), nullptr, &clean) == PEAT_STATUS_OK);
    peat_trace_record_info_t info{};
    info.struct_size = sizeof info;
    REQUIRE(peat_trace_record_info(clean, damaged, &info) == PEAT_STATUS_OK);
    REQUIRE(info.kind == PEAT_TRACE_KIND_OP);
    at = info.file_offset + info.file_bytes - 100;
    peat_trace_close(clean);
  }
  auto bytes = peat_test::read_file(path);
  REQUIRE(at < bytes.size());
  bytes[at] ^= 0x5A;
  peat_test::write_file(path, bytes);
  Reader reader(path, reader_options(), false);  // payloads are checked at load, not at open
  for (const bool pipelined : {false, true}) {
    peat::impl::playback::Playback pb(reader, options(pipelined));
    pb.set_candidate(seq_kernel, nullptr, "seq");
    REQUIRE(pb.run() == PEAT_STATUS_OK);
    CHECK(pb.summary().done == ops.size());
    CHECK(pb.summary().failed == 1);
    CHECK(pb.summary().exact == ops.size() - 1);
    const auto& r = pb.results()[1];
    CHECK(r.record == damaged);
    CHECK(r.status == PEAT_STATUS_CORRUPT_DATA);
    CHECK(r.message.find(path + ": record 4") != std::string::npos);
    CHECK(r.message.find("(op 'matmul')") != std::string::npos);
  }
}
