// peat compare GOLDEN CANDIDATE: two traces of the same training recorded on
// different stacks. Op invocations are aligned by (op family, phase,
// normalised layer, call index) — op_family.hpp clusters names such as
// aten::mm / cublasSgemm_v2 / gemm — and every aligned output pair goes
// through the analyzer (signature + spatial map) and the detector.
#include "tools/peat/commands.hpp"
#include "tools/peat/common.hpp"
#include "tools/peat/compare_ranks.hpp"
#include "tools/peat/op_family.hpp"
#include "tools/peat/replay.hpp"
#include "tools/peat/verdicts.hpp"

#include <fnmatch.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

namespace peat::cli {

namespace {

struct Options {
  std::string golden, candidate, op_glob;
  bool json = false, csv_out = false;
  std::vector<std::string> ranks;  // --ranks: the rank traces of one run (compare_ranks.hpp)
  std::string collective = "*allreduce*";
};

// family, phase, layer, call index, occurrence: several ops of one family in one
// layer and phase with the same call index (a GEMM's dgrad and wgrad) are told
// apart by their order in the trace.
using Key = std::tuple<std::string, int32_t, std::string, uint64_t, uint64_t>;

const char* phase_name(int32_t p) {
  switch (p) {
    case PEAT_PHASE_FORWARD: return "fwd";
    case PEAT_PHASE_BACKWARD: return "bwd";
    case PEAT_PHASE_OPTIMIZER: return "opt";
    default: return "other";
  }
}

std::map<Key, uint64_t> index_ops(const peat::trace_reader& r, const std::string& glob, uint64_t& ops, uint64_t& duplicates) {
  std::map<Key, uint64_t> out;
  peat_trace_filter_t f;
  peat_trace_filter_init(&f);
  f.kinds = 1u << PEAT_TRACE_KIND_OP;
  for (std::optional<uint64_t> next = r.next(0, &f); next; next = r.next(*next + 1, &f)) {
    const uint64_t i = *next;
    const peat_trace_record_info_t info = record_info(r, i);
    const std::string family = op_family(info.name);
    if (!glob.empty() && fnmatch(glob.c_str(), family.c_str(), 0) != 0 && fnmatch(glob.c_str(), info.name, 0) != 0) continue;
    ++ops;
    Key key{family, info.phase, normalise_layer(info.module_path), info.call_index, 0};
    while (out.count(key)) ++std::get<4>(key);
    if (std::get<4>(key) > 0) ++duplicates;
    out.emplace(key, i);
  }
  return out;
}

struct Pair {
  Key key;
  uint64_t golden_record = 0, candidate_record = 0, output = 0;
  std::string golden_op, candidate_op, error;
  peat_signature_t signature{};
  peat_detection_t detection{};
  bool detected = false;
};

struct Family {
  std::string name;
  int32_t phase = 0;
  uint64_t pairs = 0, failed = 0, unmerged = 0;
  peat_signature_t signature{};
  peat_detection_t detection{};
  bool detected = false;
  int64_t k = 0;
  peat_op_kind_t kind = PEAT_OP_KIND_UNKNOWN;  // the library's rule on the family's first golden record
};

peat::owned_tensor load(const peat::trace_reader& r, uint64_t rec, uint64_t t, const std::string& path) {
  return checked(path, [&] { return r.load_tensor(rec, PEAT_TRACE_SLOT_OUTPUT, t); });
}

int run(const Options& opt) {
  const peat::trace_reader g = open_trace(opt.golden), c = open_trace(opt.candidate);
  uint64_t g_ops = 0, c_ops = 0, g_dup = 0, c_dup = 0;
  const auto gi = index_ops(g, opt.op_glob, g_ops, g_dup);
  const auto ci = index_ops(c, opt.op_glob, c_ops, c_dup);
  std::vector<Pair> pairs;
  std::map<std::pair<std::string, int32_t>, Family> families;
  uint64_t only_golden = 0;
  for (const auto& [key, grec] : gi) {
    const auto it = ci.find(key);
    if (it == ci.end()) {
      ++only_golden;
      continue;
    }
    const peat_trace_record_info_t ginfo = record_info(g, grec), cinfo = record_info(c, it->second);
    Family& fam = families[{std::get<0>(key), std::get<1>(key)}];
    if (fam.pairs == 0) {
      fam.name = std::get<0>(key);
      fam.phase = std::get<1>(key);
      peat_signature_init(&fam.signature);
      peat_detect_context_t ctx;
      peat_detect_context_init(&ctx);
      checked(opt.golden, [&] { g.detect_context(grec, 0, 0, ctx); });
      fam.k = ctx.reduction_length;
      fam.kind = ctx.op_kind;
    }
    const uint64_t outs = std::min(ginfo.n_outputs, cinfo.n_outputs);
    for (uint64_t t = 0; t < outs; ++t) {
      Pair p;
      p.key = key;
      p.golden_record = grec;
      p.candidate_record = it->second;
      p.output = t;
      p.golden_op = ginfo.name;
      p.candidate_op = cinfo.name;
      peat_signature_init(&p.signature);
      peat_detection_init(&p.detection);
      ++fam.pairs;
      const peat::owned_tensor gt = load(g, grec, t, opt.golden), ct = load(c, it->second, t, opt.candidate);
      peat_signature_config_t cfg;
      peat_signature_config_init(&cfg);
      cfg.reduction_length = fam.k;
      peat::spatial_map map;
      if (const auto why = failure([&] { p.signature = peat::analyze(&gt->dl_tensor, &ct->dl_tensor, &cfg, map.get()); })) {
        p.error = *why;
        ++fam.failed;
      } else {
        peat_detect_context_t ctx;
        peat_detect_context_init(&ctx);
        ctx.op_kind = fam.k > 0 ? fam.kind : PEAT_OP_KIND_UNKNOWN;
        ctx.map = map.get();
        p.detected = !failure([&] { p.detection = peat::detect(p.signature, &ctx); });
        if (failure([&] { peat::merge(fam.signature, p.signature); })) ++fam.unmerged;
      }
      pairs.push_back(std::move(p));
    }
  }
  bool findings = false;
  for (auto& [k, fam] : families) {
    if (fam.signature.count > 0) {
      peat_detect_context_t ctx;
      peat_detect_context_init(&ctx);
      ctx.op_kind = fam.k > 0 ? fam.kind : PEAT_OP_KIND_UNKNOWN;
      peat_detection_init(&fam.detection);
      fam.detected = !failure([&] { fam.detection = peat::detect(fam.signature, &ctx); });
    }
    findings = findings || fam.failed > 0 || fam.signature.tolerance_fail_count > 0 || fam.signature.new_nonfinite_count > 0;
  }
  const uint64_t only_candidate = ci.size() - (gi.size() - only_golden);
  if (opt.json) {
    nlohmann::json j;
    j["schema_version"] = 1;
    j["command"] = "compare";
    j["golden"] = opt.golden;
    j["candidate"] = opt.candidate;
    j["alignment"] = {{"golden_ops", g_ops},          {"candidate_ops", c_ops},
                      {"aligned", gi.size() - only_golden}, {"only_golden", only_golden},
                      {"only_candidate", only_candidate}, {"repeated_keys", g_dup + c_dup}};
    nlohmann::json fams = nlohmann::json::array();
    for (const auto& [k, fam] : families) {
      nlohmann::json f = signature_json(fam.signature);
      f["family"] = fam.name;
      f["phase"] = phase_name(fam.phase);
      f["pairs"] = fam.pairs;
      f["failed"] = fam.failed;
      f["verdicts"] = verdicts_json(fam.detection, fam.detected);
      fams.push_back(std::move(f));
    }
    j["families"] = fams;
    nlohmann::json jp = nlohmann::json::array();
    for (const Pair& p : pairs) {
      nlohmann::json o = signature_json(p.signature);
      o["family"] = std::get<0>(p.key);
      o["phase"] = phase_name(std::get<1>(p.key));
      o["layer"] = std::get<2>(p.key);
      o["call"] = std::get<3>(p.key);
      o["output"] = p.output;
      o["golden"] = {{"record", p.golden_record}, {"op", p.golden_op}};
      o["candidate"] = {{"record", p.candidate_record}, {"op", p.candidate_op}};
      o["verdict"] = p.detected && p.detection.verdict_count > 0 ? peat_error_model_name(p.detection.verdicts[0].model) : "";
      if (!p.error.empty()) o["error"] = p.error;
      jp.push_back(std::move(o));
    }
    j["pairs"] = jp;
    j["findings"] = findings;
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";  // see cmd_info
  } else if (opt.csv_out) {
    std::printf("family,phase,layer,call,output,golden_op,candidate_op,elements,bitwise_mismatches,tolerance_failures,"
                "max_rel_error,relative_l2,verdict,error\n");
    for (const Pair& p : pairs)
      std::printf("%s,%s,%s,%llu,%llu,%s,%s,%llu,%llu,%llu,%.9g,%.9g,%s,%s\n", csv(std::get<0>(p.key)).c_str(),
                  phase_name(std::get<1>(p.key)), csv(std::get<2>(p.key)).c_str(),
                  static_cast<unsigned long long>(std::get<3>(p.key)), static_cast<unsigned long long>(p.output),
                  csv(p.golden_op).c_str(), csv(p.candidate_op).c_str(), static_cast<unsigned long long>(p.signature.count),
                  static_cast<unsigned long long>(p.signature.bitwise_mismatch_count),
                  static_cast<unsigned long long>(p.signature.tolerance_fail_count), p.signature.max_rel_error,
                  relative_l2(p.signature),
                  p.detected && p.detection.verdict_count > 0 ? peat_error_model_name(p.detection.verdicts[0].model) : "",
                  csv(p.error).c_str());
  } else {
    std::printf("aligned %llu op invocations (golden %llu, candidate %llu; %llu only in golden, %llu only in candidate)\n\n",
                static_cast<unsigned long long>(gi.size() - only_golden), static_cast<unsigned long long>(g_ops),
                static_cast<unsigned long long>(c_ops), static_cast<unsigned long long>(only_golden),
                static_cast<unsigned long long>(only_candidate));
    std::printf("%-14s %-5s %6s %6s %12s %12s %11s %11s  %s\n", "family", "phase", "pairs", "failed", "mismatches", "tol. fails",
                "max rel", "rel. L2", "verdict");
    for (const auto& [k, fam] : families)
      std::printf("%-14s %-5s %6llu %6llu %12llu %12llu %11.3g %11.3g  %s\n", printable(fam.name).c_str(), phase_name(fam.phase),
                  static_cast<unsigned long long>(fam.pairs), static_cast<unsigned long long>(fam.failed),
                  static_cast<unsigned long long>(fam.signature.bitwise_mismatch_count),
                  static_cast<unsigned long long>(fam.signature.tolerance_fail_count), fam.signature.max_rel_error,
                  relative_l2(fam.signature), top_verdict(fam.detection, fam.detected).c_str());
    for (const Pair& p : pairs)
      if (!p.error.empty())
        std::printf("pair %s record %llu vs %llu: %s\n", printable(p.golden_op).c_str(), static_cast<unsigned long long>(p.golden_record),
                    static_cast<unsigned long long>(p.candidate_record), p.error.c_str());
  }
  if (pairs.empty()) throw CliError(kBadInput, "no op invocation of " + opt.golden + " aligns with one of " + opt.candidate);
  return findings ? kFindings : kOk;
}

}  // namespace

Command add_compare(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "compare", "Align the op invocations of two traces recorded on different stacks and analyse every aligned pair");
  auto o = std::make_shared<Options>();
  sub->add_option("GOLDEN_TRACE", o->golden, "trace of the trusted stack");
  sub->add_option("CANDIDATE_TRACE", o->candidate, "trace of the stack under test");
  sub->add_option("--ranks", o->ranks,
                  "instead: the rank traces of one data-parallel run; checks that parameters and all-reduced "
                  "gradients agree across ranks and names the first step, op and rank that diverge")
      ->expected(1, 1 << 20);
  sub->add_option("--collective", o->collective, "with --ranks: glob of the collective ops whose outputs must agree");
  sub->add_option("--op", o->op_glob, "only ops whose family or name matches this shell glob (e.g. gemm)");
  auto* j = sub->add_flag("--json", o->json, "print one JSON object (docs/schemas/compare.schema.json)");
  sub->add_flag("--csv", o->csv_out, "print one CSV line per aligned pair")->excludes(j);
  return {sub, [o] {
            if (!o->ranks.empty()) {
              if (!o->golden.empty() || o->csv_out)
                throw CliError(kUsage, "--ranks takes the traces itself (and has no --csv)");
              CompareRanksOptions ro;
              ro.traces = o->ranks;
              ro.collective_glob = o->collective;
              ro.json = o->json;
              return run_compare_ranks(ro);
            }
            if (o->golden.empty() || o->candidate.empty())
              throw CliError(kUsage, "GOLDEN_TRACE and CANDIDATE_TRACE are required (or --ranks TRACE...)");
            return run(*o);
          }};
}

}  // namespace peat::cli
