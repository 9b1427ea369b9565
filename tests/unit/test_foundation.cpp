// Unit tests of the foundation's internals: tensor views, option structs, the
// exception barrier, the session and the backend registry.
#include <catch2/catch.hpp>

#include "backend/backend.hpp"
#include "bindings/c/barrier.hpp"
#include "core/dtype.hpp"
#include "core/tensor_view.hpp"
#include "core/versioned_struct.hpp"
#include "session/session.hpp"

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

DLTensor make_tensor(void* data, DLDataType dtype, int ndim, int64_t* shape, int64_t* strides = nullptr) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = shape;
  t.strides = strides;
  return t;
}

}  // namespace

TEST_CASE("TensorView maps linear indices to strided element offsets", "[tensor_view]") {
  std::vector<float> buffer(64);
  int64_t shape[3] = {2, 3, 4};
  SECTION("compact tensor is contiguous") {
    DLTensor t = make_tensor(buffer.data(), peat::impl::make_dtype(kDLFloat, 32), 3, shape);
    const auto view = peat::impl::make_view(&t, "t");
    CHECK(view.numel == 24);
    CHECK(view.contiguous);
    CHECK(view.offset_of(23) == 23);
  }
  SECTION("transposed view of a 3x4 matrix") {
    int64_t shape2[2] = {4, 3};
    int64_t strides[2] = {1, 4};
    DLTensor t = make_tensor(buffer.data(), peat::impl::make_dtype(kDLFloat, 32), 2, shape2, strides);
    const auto view = peat::impl::make_view(&t, "t");
    CHECK_FALSE(view.contiguous);
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 3; ++j) CHECK(view.offset_of(i * 3 + j) == i + 4 * j);
  }
  SECTION("negative stride (reversed view) with a byte offset") {
    int64_t shape1[1] = {5};
    int64_t strides[1] = {-1};
    DLTensor t = make_tensor(buffer.data(), peat::impl::make_dtype(kDLFloat, 32), 1, shape1, strides);
    t.byte_offset = 4 * 4;  // element 4 is the first element of the view
    const auto view = peat::impl::make_view(&t, "t");
    CHECK(view.base == reinterpret_cast<std::byte*>(buffer.data() + 4));
    CHECK(view.offset_of(0) == 0);
    CHECK(view.offset_of(4) == -4);
  }
  SECTION("size-1 dimensions with any stride are still contiguous") {
    int64_t shape2[2] = {1, 8};
    int64_t strides[2] = {999, 1};
    DLTensor t = make_tensor(buffer.data(), peat::impl::make_dtype(kDLFloat, 32), 2, shape2, strides);
    CHECK(peat::impl::make_view(&t, "t").contiguous);
  }
  SECTION("mismatched shapes are named in the error") {
    int64_t other[3] = {2, 4, 3};
    DLTensor a = make_tensor(buffer.data(), peat::impl::make_dtype(kDLFloat, 32), 3, shape);
    DLTensor b = make_tensor(buffer.data(), peat::impl::make_dtype(kDLFloat, 32), 3, other);
    try {
      peat::impl::require_same_shape(peat::impl::make_view(&a, "golden"), "golden", peat::impl::make_view(&b, "candidate"), "candidate");
      FAIL("no error");
    } catch (const peat::impl::Error& e) {
      CHECK(e.status() == PEAT_STATUS_SHAPE_MISMATCH);
      CHECK(std::string(e.what()) == "golden has shape [2, 3, 4] but candidate has shape [2, 4, 3]");
    }
  }
}

TEST_CASE("dtype helpers", "[dtype]") {
  CHECK(peat::impl::float_kind(peat::impl::make_dtype(kDLBfloat, 16)) == peat::impl::Float::BF16);
  CHECK_FALSE(peat::impl::float_kind(peat::impl::make_dtype(kDLFloat, 8)).has_value());
  CHECK_FALSE(peat::impl::float_kind(DLDataType{kDLFloat, 32, 2}).has_value());
  CHECK_THROWS_AS(peat::impl::require_float(peat::impl::make_dtype(kDLInt, 32), "x"), peat::impl::Error);
  CHECK(peat::impl::mantissa_bits(peat::impl::Float::F16) == 10);
  CHECK(peat::impl::float_size(peat::impl::Float::F64) == 8);
  for (const char* name : {"f16", "bf16", "f32", "f64", "i8", "u8", "bool"})
    CHECK(std::string(peat::impl::dtype_name(*peat::impl::dtype_from_name(name))) == name);
}

namespace {
struct OptionsV2 {
  uint32_t struct_size;
  int32_t a;
  int32_t b;  // added in "version 2"
};
void init_v2(OptionsV2* o) { *o = OptionsV2{sizeof(OptionsV2), 1, 2}; }
}  // namespace

TEST_CASE("read_options accepts older structs and refuses newer ones", "[options]") {
  CHECK(peat::impl::read_options<OptionsV2>(nullptr, "o", init_v2).b == 2);
  OptionsV2 old{offsetof(OptionsV2, b), 7, 99};  // a version-1 caller: b is not theirs
  const auto read = peat::impl::read_options(&old, "o", init_v2);
  CHECK(read.a == 7);
  CHECK(read.b == 2);
  OptionsV2 newer{sizeof(OptionsV2) + 4, 7, 8};
  CHECK_THROWS_AS(peat::impl::read_options(&newer, "o", init_v2), peat::impl::Error);
  OptionsV2 zero{0, 7, 8};
  CHECK_THROWS_AS(peat::impl::read_options(&zero, "o", init_v2), peat::impl::Error);
}

TEST_CASE("the exception barrier turns every exception into a status and a message", "[barrier]") {
  CHECK(peat::impl::c_call("f", [] {}) == PEAT_STATUS_OK);
  CHECK(peat::impl::c_call("f", [] { peat::impl::fail(PEAT_STATUS_NOT_FOUND, "thing {} missing", 3); }) == PEAT_STATUS_NOT_FOUND);
  CHECK(std::string(peat::impl::last_error()) == "f: thing 3 missing");
  CHECK(peat::impl::c_call("g", [] { throw std::bad_alloc(); }) == PEAT_STATUS_OUT_OF_MEMORY);
  CHECK(std::string(peat::impl::last_error()) == "g: out of memory");
  CHECK(peat::impl::c_call("h", [] { throw std::runtime_error("boom"); }) == PEAT_STATUS_INTERNAL);
  CHECK(std::string(peat::impl::last_error()) == "h: internal error: boom");
  CHECK(peat::impl::c_call("i", [] { throw 42; }) == PEAT_STATUS_INTERNAL);
  // The message is per thread.
  std::thread([] { CHECK(std::string(peat::impl::last_error()).empty()); }).join();
}

TEST_CASE("session counters are exact under concurrent calls", "[session]") {
  peat_session_options_t options;
  peat_session_options_init(&options);
  peat::impl::session::Session session(options);
  constexpr int kThreads = 8, kCalls = 20000;
  std::vector<std::thread> threads;
  std::vector<std::set<uint64_t>> seen(kThreads);
  std::vector<uint32_t> ids(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ids[t] = session.intern_op("shared_gemm");
      session.intern_op("op_of_thread_" + std::to_string(t));
      for (int i = 0; i < kCalls; ++i) seen[t].insert(session.next_call(ids[t]));
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 1; t < kThreads; ++t) CHECK(ids[t] == ids[0]);
  CHECK(session.call_count(ids[0]) == uint64_t{kThreads} * kCalls);
  CHECK(session.op_count() == kThreads + 1);
  // Every call index was handed out exactly once.
  std::set<uint64_t> all;
  for (const auto& s : seen) all.insert(s.begin(), s.end());
  CHECK(all.size() == size_t{kThreads} * kCalls);
  CHECK(*all.rbegin() == uint64_t{kThreads} * kCalls - 1);
}

TEST_CASE("the session checks a step, a phase, a log level and a log entry's buffer", "[session]") {
  peat_session_options_t options;
  peat_session_options_init(&options);
  peat::impl::session::Session session(options);
  CHECK_THROWS_WITH(session.set_step(-1), "step -1 is negative");
  CHECK_THROWS_WITH(session.set_phase(4), "phase 4 is not a peat_phase_code value (0..3)");
  CHECK_THROWS_WITH(session.log(7, "x"), "level 7 is not a peat_log_level_code value (0..3)");
  session.set_step(3);
  session.set_phase(PEAT_PHASE_BACKWARD);
  CHECK(session.step() == 3);
  CHECK(session.phase() == PEAT_PHASE_BACKWARD);
  CHECK(session.log_count() == 0);

  session.log(PEAT_LOG_WARNING, "hello");
  peat_log_level_t level = PEAT_LOG_DEBUG;
  std::size_t needed = 0;
  char small[4] = "zzz";
  CHECK_THROWS_WITH(session.log_entry_to(0, &level, small, sizeof small, &needed),
                    "log entry 0 needs 6 bytes, buffer has 4");
  CHECK(std::string(small) == "hel");  // cut to fit
  CHECK(needed == 6);
  CHECK(level == PEAT_LOG_WARNING);
  char big[8];
  session.log_entry_to(0, nullptr, big, sizeof big, nullptr);
  CHECK(std::string(big) == "hello");
  CHECK_THROWS_WITH(session.log_entry_to(0, nullptr, nullptr, 1, nullptr),
                    "argument 'buffer' is NULL but capacity is 1");
}

TEST_CASE("registry searches PEAT_BACKEND_PATH and falls back past a refused plugin", "[backend]") {
  const std::string dir = PEAT_TEST_PLUGIN_DIR;
  ::setenv("PEAT_BACKEND_PATH", (dir + "/refused:" + dir + "/fallback:" + dir).c_str(), 1);
  auto& registry = peat::impl::backend::Registry::instance();
  auto search = registry.search_path();
  REQUIRE(search.size() >= 3);
  CHECK(search[0] == dir + "/refused");

  // refused/libpeat-backend-shadowed.so speaks ABI 99; fallback/ has a good one.
  peat::impl::backend::Backend& shadowed = registry.get("shadowed");
  CHECK(std::string(shadowed.name()) == "shadowed");
  CHECK(shadowed.path() == dir + "/fallback/libpeat-backend-shadowed.so");
  CHECK(shadowed.device_count() == 2);
  CHECK(PEAT_BACKEND_HAS(shadowed, copy));
  CHECK_FALSE(PEAT_BACKEND_HAS(shadowed, signature_accumulate));

  peat::impl::backend::Backend& testmem = registry.get("testmem");
  CHECK(testmem.device_info(1).device_id == 1);
  CHECK(&registry.get("testmem") == &testmem);  // loaded once

  try {
    registry.get("wrongabi");
    FAIL("wrong-ABI plugin was accepted");
  } catch (const peat::impl::Error& e) {
    CHECK(e.status() == PEAT_STATUS_UNAVAILABLE);
    CHECK_THAT(e.what(), Catch::Contains("ABI 99") && Catch::Contains("libpeat-backend-wrongabi.so"));
  }
  // A session can run on a plugin backend.
  peat_session_options_t options;
  peat_session_options_init(&options);
  options.backend = "testmem";
  peat::impl::session::Session session(options);
  CHECK(std::string(session.backend().name()) == "testmem");
  ::unsetenv("PEAT_BACKEND_PATH");
}

TEST_CASE("validate_table names what is wrong", "[backend]") {
  peat_backend_api_t table = *peat::impl::backend::cpu_backend_table();
  CHECK(peat::impl::backend::validate_table(&table, PEAT_BACKEND_ABI_MAJOR).empty());
  CHECK_THAT(peat::impl::backend::validate_table(nullptr, 1), Catch::Contains("NULL"));
  table.struct_size = 16;
  CHECK_THAT(peat::impl::backend::validate_table(&table, 1), Catch::Contains("struct_size 16"));
  table = *peat::impl::backend::cpu_backend_table();
  table.alloc = nullptr;
  CHECK_THAT(peat::impl::backend::validate_table(&table, 1), Catch::Contains("'alloc'"));
  table = *peat::impl::backend::cpu_backend_table();
  table.name = "";
  CHECK_THAT(peat::impl::backend::validate_table(&table, 1), Catch::Contains("no name"));
}

TEST_CASE("CPU backend memory entries", "[backend]") {
  const peat_backend_api_t& cpu = *peat::impl::backend::cpu_backend_table();
  void* p = nullptr;
  REQUIRE(cpu.alloc(0, 1000, &p) == PEAT_STATUS_OK);
  CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
  std::vector<char> src(1000, 'x');
  CHECK(cpu.copy(p, DLDevice{kDLCPU, 0}, src.data(), DLDevice{kDLCPU, 0}, src.size(), nullptr) == PEAT_STATUS_OK);
  CHECK(std::memcmp(p, src.data(), src.size()) == 0);
  CHECK(cpu.copy(p, DLDevice{kDLCUDA, 0}, src.data(), DLDevice{kDLCPU, 0}, 10, nullptr) == PEAT_STATUS_UNSUPPORTED);
  CHECK_THAT(cpu.last_error(), Catch::Contains("host memory only"));
  void* ticket = nullptr;
  std::vector<char> dst(1000);
  CHECK(cpu.stage_to_host_async(dst.data(), p, DLDevice{kDLCPU, 0}, 1000, nullptr, &ticket) == PEAT_STATUS_OK);
  CHECK(cpu.stage_wait(ticket) == PEAT_STATUS_OK);
  CHECK(dst == src);
  CHECK(cpu.free(0, p) == PEAT_STATUS_OK);
  CHECK(cpu.alloc(0, SIZE_MAX, &p) == PEAT_STATUS_OUT_OF_MEMORY);
  CHECK(cpu.alloc(3, 8, &p) == PEAT_STATUS_INVALID_ARGUMENT);
}
