// peat.hpp, the header-only C++ layer: every class and function is used once
// here (so each compiles), against the real library: a GEMM recorded by the
// profiler, read back, replayed EXACT through a same-op candidate, swapped in
// by the injector on its schedule, aggregated, detected and reported.
#include <catch2/catch.hpp>

#include <peat/peat.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

// out[0] = in[0] * in[1] for [M, K] x [K, N] f32 (the golden and, as itself, the candidate).
int32_t gemm(void* ctx, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out, const void*) {
  if (n_in != 2 || n_out != 1) return 1;
  const int64_t M = in[0].shape[0], K = in[0].shape[1], N = in[1].shape[1];
  const auto* a = static_cast<const float*>(in[0].data);
  const auto* b = static_cast<const float*>(in[1].data);
  auto* c = static_cast<float*>(out[0].data);
  const float scale = ctx ? *static_cast<const float*>(ctx) : 1.0f;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < K; ++p) acc += a[i * K + p] * b[p * N + j];
      c[i * N + j] = acc * scale;
    }
  return 0;
}

}  // namespace

TEST_CASE("peat.hpp covers every object: record, read, replay, inject, aggregate, detect, report", "[hpp]") {
  const char* path = "unit_peat_hpp.peat";
  std::vector<float> a(4 * 8), b(8 * 3), c(4 * 3);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) * 0.5f - 1.0f;
  peat::tensor_view ta(a.data(), {4, 8}), tb(b.data(), {8, 3}), tc(c.data(), {4, 3});
  CHECK(ta.numel() == 32);
  CHECK(peat::numel(tb.get()) == 24);
  DLTensor ins[2] = {*ta.get(), *tb.get()};
  REQUIRE(gemm(nullptr, ins, 2, tc.get(), 1, nullptr) == 0);

  peat::session s;
  const uint32_t op = s.intern_op("aten::mm");
  {
    peat::profiler prof(s, path);
    auto rule = peat_sample_rule_t{};
    peat_sample_rule_init(&rule);
    rule.op_glob = "*";
    prof.add_rule(rule);
    CHECK(prof.should_record(op, 0));
    const DLTensor* in_ptrs[2] = {ta.get(), tb.get()};
    const DLTensor* out_ptrs[1] = {tc.get()};
    peat_op_record_t rec;
    peat_op_record_init(&rec);
    rec.op = op;
    rec.inputs = in_ptrs;
    rec.n_inputs = 2;
    rec.outputs = out_ptrs;
    rec.n_outputs = 1;
    const int64_t tile[2] = {2, 3};
    const peat_attr_t attrs[4] = {peat::int_attr("K", 8), peat::float_attr("alpha", 1.0),
                                  peat::string_attr("layout", "nn"), peat::ints_attr("tile", tile, 2)};
    rec.attrs = attrs;
    rec.n_attrs = 4;
    CHECK(prof.record_op(rec));
    prof.record_scalar("loss", 0, 1.5);
    prof.mark_step(0);
    prof.flush();
    prof.close();
    CHECK(prof.stats().records_written >= 3);
  }

  peat::trace_reader reader(path);
  CHECK(reader.run_info().format_major == 1);
  REQUIRE(reader.record_count() >= 1);
  const auto first_op = reader.next(0);
  REQUIRE(first_op.has_value());
  CHECK(std::string(reader.record_info(*first_op).name) == "aten::mm");
  CHECK(reader.tensor_count(*first_op, PEAT_TRACE_SLOT_INPUT) == 2);
  CHECK(reader.attr(*first_op, 0).i == 8);
  CHECK(reader.attr(*first_op, 1).f == 1.0);
  CHECK(std::string(reader.attr(*first_op, 2).s) == "nn");
  CHECK((reader.attr(*first_op, 3).n_ints == 2 && reader.attr(*first_op, 3).ints[1] == 3));
  CHECK(reader.tensor_info(*first_op, PEAT_TRACE_SLOT_OUTPUT, 0).numel == 12);
  peat::owned_tensor out0 = reader.load_tensor(*first_op, PEAT_TRACE_SLOT_OUTPUT, 0);
  CHECK(static_cast<const float*>(out0->dl_tensor.data)[5] == c[5]);
  std::vector<float> loaded(12);
  reader.load_tensor(*first_op, PEAT_TRACE_SLOT_OUTPUT, 0, loaded.data(), loaded.size() * sizeof(float));
  CHECK(loaded == c);
  CHECK(reader.verify() >= 3);
  CHECK_THROWS_AS(reader.tag(reader.run_info().n_tags), peat::error);  // past the last tag
  const char* first_skipped = nullptr;
  CHECK(reader.skipped(&first_skipped) == 0);
  CHECK(std::string(first_skipped) == "");
  const char* copy = "unit_peat_hpp_copy.peat";
  uint64_t dropped = 1;
  CHECK(reader.copy_intact(copy, &dropped) == reader.record_count());
  CHECK(dropped == 0);
  std::remove(copy);
  peat_detect_context_t ctx;
  peat_detect_context_init(&ctx);
  reader.detect_context(*first_op, 0, 0, ctx);
  CHECK(ctx.reduction_length == 8);

  // Same-op replay is EXACT.
  peat::playback pb(reader);
  pb.set_candidate(gemm);
  CHECK(pb.candidate() == &gemm);
  pb.run();
  CHECK(pb.summary().exact == 1);
  REQUIRE(pb.result_count() == 1);
  CHECK(pb.result(0).bitwise_mismatches == 0);
  CHECK(pb.result_signature(0).count == 12);
  CHECK(pb.group_count(PEAT_PLAYBACK_BY_OP) == 1);
  CHECK(pb.group(PEAT_PLAYBACK_BY_OP, 0).records == 1);
  CHECK(pb.group_signature(PEAT_PLAYBACK_BY_OP, 0).bitwise_mismatch_count == 0);
  CHECK(pb.group_verdicts(PEAT_PLAYBACK_BY_OP, 0).records == 1);

  // A partitioned playback: share 1 of 2 merged into share 0 gives every result.
  peat_playback_options_t halves;
  peat_playback_options_init(&halves);
  halves.partition_world = 2;
  peat::playback share0(reader, &halves);
  halves.partition_rank = 1;
  peat::playback share1(reader, &halves);
  for (peat::playback* p : {&share0, &share1}) {
    p->set_candidate(gemm);
    p->run();
  }
  CHECK(share0.partition_share(0).records + share0.partition_share(1).records == 1);
  const std::vector<std::byte> exported = share1.export_results();
  CHECK_FALSE(exported.empty());
  share0.import_results(exported.data(), exported.size());
  CHECK(share0.result_count() == 1);

  // Runtime FI: a candidate that doubles its result fires on every 2nd call.
  peat::injector inj(s);
  float twice = 2.0f;
  inj.set_candidate("aten::*", gemm, &twice);
  peat_injector_policy_t policy = peat::injector::default_policy();
  policy.action = PEAT_ACTION_RUN_BOTH;
  policy.every_n = 2;  // calls 0, 2, 4 ... (call 0 went to the profiler's record)
  inj.add_policy(policy);
  std::vector<float> d(12);
  peat::tensor_view td(d.data(), {4, 3});
  const peat::injector::dispatched d0 = inj.dispatch(op, ins, 2, td.get(), 1, nullptr, gemm);
  const peat::injector::dispatched d1 = inj.dispatch(op, ins, 2, td.get(), 1, nullptr, gemm);
  CHECK((d0.call == 1 && d1.call == 2));
  CHECK(d0.action == PEAT_ACTION_RUN_GOLDEN);
  CHECK(d1.action == PEAT_ACTION_RUN_BOTH);
  REQUIRE(inj.firing_count() == 1);
  CHECK(inj.firing(0).call == d1.call);
  const peat_signature_t fsig = inj.firing_signature(0);
  CHECK(fsig.count == 12);
  CHECK(d == c);  // RUN_BOTH keeps the golden result
  CHECK(inj.firing(0).rerun_mismatches == -1);
  CHECK_THROWS_AS(inj.firing_rerun_signature(0), peat::error);

  // Signatures, aggregation, detection, maps, reports.
  std::vector<float> c2 = c;
  c2[3] = -c2[3] + 1.0f;
  peat::tensor_view tc2(c2.data(), {4, 3});
  peat::spatial_map map;
  peat_signature_t sig = peat::analyze(tc, tc2, nullptr, map.get());
  CHECK(sig.bitwise_mismatch_count == 1);
  CHECK(map->rows == 4);
  peat::accumulate(sig, tc, tc);
  CHECK(sig.count == 24);
  peat_signature_t merged = peat::analyze(tc, tc);
  peat::merge(merged, sig);
  CHECK(merged.count == 36);
  CHECK(peat::rmse(sig) > 0);
  CHECK(peat::relative_l2(sig) > 0);
  CHECK(peat::cosine(sig) < 1.0);
  CHECK(peat::sqnr_db(sig) > 0);
  CHECK_FALSE(peat::allclose(sig));
  CHECK(peat::effective_mantissa_bits(fsig) < 24);
  peat::aggregator agg;
  agg.add(op, 0, 0, sig);
  agg.add(op, 1, 1, fsig);
  CHECK(agg.call_count(op) == 2);
  CHECK(agg.signature(op).count == 36);
  CHECK(agg.series(op).size() == 2);
  const peat_detection_t det = peat::detect(fsig);
  CHECK(det.verdict_count >= 1);
  CHECK(peat::render(det, PEAT_RENDER_JSON).find("schema_version") != std::string::npos);
  peat::report rep;
  rep.add_signature("test", "aten::mm", 1, 1, fsig, &det);
  rep.add_spatial_map("map", *map);
  rep.add_playback("same-op", pb);
  CHECK_FALSE(rep.focus_call("same-op").has_value());  // every call exact
  rep.add_candidate_map("same-op", "a map", *map);
  CHECK(rep.render_html().find("<html") != std::string::npos);

  // The error-model library and the noise band.
  peat_inject_spec_t spec;
  peat_inject_spec_init(&spec, PEAT_INJECT_BITFLIP);
  spec.bit = 31;
  const peat_inject_truth_t truth = peat::inject_apply(spec, td.get(), 7);
  CHECK(truth.changed == 1);
  const double ref[4] = {1.0, 0.9, 0.8, 0.7}, rerun[4] = {1.0, 0.91, 0.79, 0.71};
  peat::noise_band band(ref, 4);
  band.add_rerun(rerun, 4);
  CHECK(band.judge(rerun, 4).struct_size == sizeof(peat_impact_t));

  // Errors carry the status and the message.
  try {
    peat::trace_reader missing("no-such-file.peat");
    FAIL("no exception");
  } catch (const peat::error& e) {
    CHECK(e.status() != PEAT_STATUS_OK);
    CHECK_THAT(e.what(), Catch::Contains("no-such-file.peat"));
  }
  std::remove(path);
}

TEST_CASE("peat.hpp wraps the C API with RAII and exceptions", "[hpp]") {
  peat::require_compatible_library();
  peat::session s;
  const uint32_t op = s.intern_op("gemm");
  CHECK(s.next_call(op) == 0);
  CHECK(s.call_count(op) == 1);
  CHECK(s.op_name(op) == "gemm");
  s.set_step(3);
  CHECK(s.step() == 3);
  CHECK(std::string(s.get_backend().name()) == "cpu");
  CHECK(s.get_backend().device_count() == 1);
  try {
    s.set_step(-2);
    FAIL("no exception");
  } catch (const peat::error& e) {
    CHECK(e.status() == PEAT_STATUS_INVALID_ARGUMENT);
    CHECK_THAT(e.what(), Catch::Contains("step -2 is negative"));
  }
  peat::session moved = std::move(s);
  CHECK(moved.get() != nullptr);
  CHECK(s.get() == nullptr);
  CHECK_THROWS_AS(peat::backend::get("no-such-backend"), peat::error);
}
