// Fuzz target: the injector's specification parsing. Input selects between
//  - a policy (op-name glob, action, schedule fields, an error-model spec)
//    added to an injector, then decisions for op names from the input;
//  - an error-model spec whose every field comes from the input, applied with
//    peat_inject_apply to a small tensor of a float dtype.
// Pointer fields are set by the harness (the C API cannot check pointers);
// every other field is passed through as the input says.
#include "fuzz_input.hpp"

#include <peat/peat.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using peat::fuzz::Input;

void check(peat_status_t status) {
  if (status != PEAT_STATUS_OK && peat_last_error_message()[0] == '\0') {
    std::fprintf(stderr, "status %s without a message\n", peat_status_string(status));
    std::abort();
  }
}

std::string text(Input& in) {
  const std::size_t n = in.below(24);
  std::vector<uint8_t> b = in.bytes(n);
  std::string s(b.begin(), b.end());
  for (char& c : s)
    if (c == '\0') c = '*';
  return s;
}

// Copies input bytes over every field after struct_size, then makes the
// pointer fields safe: `elements` holds exactly `count` indices or is NULL,
// `stale` is NULL or a tensor the size of `target`.
void fill_spec(Input& in, peat_inject_spec_t& spec, std::vector<int64_t>& elements, const DLTensor* stale) {
  peat_inject_spec_init(&spec, static_cast<peat_inject_kind_t>(in.below(12)));
  if (in.below(2)) {
    const std::vector<uint8_t> raw = in.bytes(sizeof spec - 8);
    if (!raw.empty()) std::memcpy(reinterpret_cast<uint8_t*>(&spec) + 8, raw.data(), raw.size());
  }
  spec.elements = nullptr;
  spec.stale = nullptr;
  if (in.below(3) == 0) {
    elements.resize(in.below(16));
    for (int64_t& e : elements) e = in.take<int8_t>();
    spec.count = static_cast<int64_t>(elements.size());
    spec.elements = elements.data();
  }
  if (in.below(2)) spec.stale = stale;
}

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  DLTensor dl{};
};

void make(Input& in, Tensor& t, const DLDataType dtype, int64_t rows, int64_t cols) {
  t.shape = {rows, cols};
  t.bytes.assign(static_cast<std::size_t>(rows * cols) * (dtype.bits / 8), 0);
  const std::vector<uint8_t> fill = in.bytes(t.bytes.size());
  if (!fill.empty()) std::memcpy(t.bytes.data(), fill.data(), fill.size());
  t.dl.data = t.bytes.data();
  t.dl.device = {kDLCPU, 0};
  t.dl.ndim = 2;
  t.dl.dtype = dtype;
  t.dl.shape = t.shape.data();
}

void apply_spec(Input& in) {
  const DLDataType dtypes[] = {{kDLFloat, 16, 1}, {kDLBfloat, 16, 1}, {kDLFloat, 32, 1}, {kDLFloat, 64, 1},
                               {kDLInt, 32, 1}};
  const DLDataType dtype = dtypes[in.below(5)];
  const int64_t rows = 1 + static_cast<int64_t>(in.below(24)), cols = 1 + static_cast<int64_t>(in.below(24));
  Tensor target, source, stale;
  make(in, target, dtype, rows, cols);
  make(in, source, dtype, rows, cols);
  make(in, stale, dtype, rows, cols);
  peat_inject_spec_t spec;
  std::vector<int64_t> elements;
  fill_spec(in, spec, elements, &stale.dl);
  peat_inject_truth_t truth;
  peat_inject_truth_init(&truth);
  const uint64_t seed = in.take<uint64_t>();
  check(peat_inject_apply(&spec, &target.dl, in.below(2) ? &source.dl : nullptr, seed, 1, 2,
                          in.below(4) ? &truth : nullptr));
  double out = 0;
  check(peat_inject_round_value(in.take<double>(), in.take<int8_t>(), in.take<int8_t>(), in.take<int8_t>(), &out));
}

void policies(Input& in) {
  peat_session_options_t so;
  peat_session_options_init(&so);
  so.max_ops = 16;
  peat_session_t* session = nullptr;
  if (peat_session_create(&so, &session) != PEAT_STATUS_OK) std::abort();
  peat_injector_t* injector = nullptr;
  if (peat_injector_create(session, nullptr, &injector) != PEAT_STATUS_OK) std::abort();
  const int n_policies = 1 + static_cast<int>(in.below(3));
  std::vector<std::string> patterns(n_policies);
  std::vector<peat_inject_spec_t> specs(n_policies);
  std::vector<std::vector<int64_t>> elements(n_policies);
  for (int i = 0; i < n_policies; ++i) {
    peat_injector_policy_t p;
    peat_injector_policy_init(&p);
    patterns[i] = text(in);
    p.op_pattern = in.below(16) ? patterns[i].c_str() : nullptr;
    const uint8_t mask = in.byte();
    if (mask & 1) p.action = in.take<int8_t>();
    if (mask & 2) p.every_n = in.take<uint8_t>(), p.phase_offset = in.take<uint8_t>();
    if (mask & 4) p.probability = in.take<double>();
    if (mask & 8) p.step_begin = in.take<int8_t>(), p.step_end = in.take<int8_t>();
    if (mask & 16) p.first_calls = in.take<uint8_t>(), p.max_firings = in.take<uint8_t>();
    if (mask & 32) p.phase_mask = in.take<uint8_t>();
    if (mask & 64) p.output_index = in.take<int8_t>();
    if (mask & 128) p.struct_size = in.take<uint32_t>();
    if (p.action == PEAT_ACTION_INJECT || in.below(4) == 0) {
      fill_spec(in, specs[i], elements[i], nullptr);
      p.spec = &specs[i];
    }
    check(peat_injector_add_policy(injector, &p, nullptr));
  }
  for (int k = 0; k < 8 && in.left() > 0; ++k) {
    const std::string name = text(in);
    uint32_t op = 0;
    const peat_status_t st = peat_session_intern_op(session, name.c_str(), &op);
    check(st);
    if (st != PEAT_STATUS_OK) continue;
    check(peat_session_set_step(session, in.take<int8_t>()));
    check(peat_session_set_phase(session, static_cast<peat_phase_t>(in.below(5))));
    uint64_t call = 0;
    (void)peat_injector_decide(injector, op, &call);
    (void)peat_injector_decide_call(injector, op, in.take<uint8_t>());
  }
  peat_injector_destroy(injector);
  peat_session_destroy(session);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  Input in(data, size);
  if (in.byte() & 1)
    apply_spec(in);
  else
    policies(in);
  return 0;
}
