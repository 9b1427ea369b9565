// Inputs that reach the report through the library rather than files: a
// finished playback (its per-call verdicts and the detection behind each
// op output's top model), noise bands and runtime-FI runs.
#include "lib/report/report.hpp"

#include "lib/analyzer/noise_band.hpp"
#include "lib/core/error.hpp"
#include "lib/playback/playback.hpp"

#include <algorithm>
#include <cmath>

namespace peat::impl::report {

namespace {

// Models whose spatial map shows where the fault sits; their calls are the
// ones worth mapping.
bool spatial_model(int32_t m) {
  return m == PEAT_ERROR_MODEL_REGION || m == PEAT_ERROR_MODEL_STUCK_AT || m == PEAT_ERROR_MODEL_DROPPED_WRITES;
}

template <typename T>
T* find_by_name(std::vector<T>& v, const std::string& name) {
  for (auto& x : v)
    if (x.name == name) return &x;
  return nullptr;
}

}  // namespace

std::string Report::candidate_name(const std::string& name) { return name.empty() ? "candidate" : name; }

void Report::add_playback(const std::string& candidate, const playback::Playback& pb) {
  CandidatePlayback c;
  c.name = candidate_name(candidate);
  const auto& s = pb.summary();
  c.selected = s.selected;
  c.ok = s.ok;
  c.failed = s.failed;
  c.exact = s.exact;
  c.mismatched = s.mismatched;
  c.nondeterministic = s.nondeterministic;
  const auto& results = pb.results();
  // Focus: a call whose own verdict is spatial (most mismatches), else the
  // call with most tolerance failures, then mismatches; none when the calls
  // differ within tolerance only (a map of spread rounding shows nothing).
  struct Best {
    bool spatial = false;
    uint64_t tol = 0, mism = 0;
    std::optional<FocusCall> call;
  } best;
  const auto offer = [&](bool spatial, uint64_t tol, uint64_t mism, FocusCall call) {
    if (mism == 0 || (!spatial && tol == 0)) return;  // only spread rounding: no map tells more
    const bool better = !best.call || (spatial && !best.spatial) ||
                        (spatial == best.spatial && (spatial ? mism > best.mism
                                                             : tol > best.tol || (tol == best.tol && mism > best.mism)));
    if (better) best = {spatial, tol, mism, call};
  };
  const uint64_t groups = pb.group_count(PEAT_PLAYBACK_BY_OP);
  for (uint64_t g = 0; g < groups; ++g) {
    const playback::Group& group = pb.group(PEAT_PLAYBACK_BY_OP, g);
    std::vector<uint64_t> members;  // result indices of this op
    for (uint64_t i = 0; i < results.size(); ++i)
      if (results[i].op == group.name) members.push_back(i);
    for (uint64_t out = 0; out < group.n_outputs; ++out) {
      OpOutcome o;
      o.op = group.name;
      if (group.n_outputs > 1) {
        std::string name;
        for (uint64_t i : members)
          if (results[i].status == PEAT_STATUS_OK && out < results[i].n_outputs) {
            name = pb.output_name(results[i].record, out);
            break;
          }
        o.op += "[" + (name.empty() ? std::to_string(out) : name) + "]";
      }
      o.records = group.records;
      o.failed = group.failed;
      o.verdicts = pb.group_verdicts(PEAT_PLAYBACK_BY_OP, g, out);
      o.merged = pb.group_signature(PEAT_PLAYBACK_BY_OP, g, out, PEAT_PLAYBACK_FIRST_VS_GOLDEN);
      uint64_t best_mism = 0;
      bool have = false;
      for (uint64_t i : members) {
        const playback::Result& r = results[i];
        if (r.status != PEAT_STATUS_OK || out >= r.signatures.size()) continue;
        const peat_signature_t& sig = r.signatures[out][PEAT_PLAYBACK_FIRST_VS_GOLDEN];
        o.steps.push_back(static_cast<double>(r.step));
        o.max_rel_error.push_back(sig.max_rel_error);
        if (sig.bitwise_mismatch_count == 0) {
          ++o.exact;
          if (o.verdicts.top_model == PEAT_ERROR_MODEL_EXACT && !have) {
            o.detection = pb.result_detection(i, out);
            o.detection_record = r.record;
            have = true;
          }
          continue;
        }
        peat_detection_t d = pb.result_detection(i, out);
        const bool names_top = d.verdict_count > 0 && d.verdicts[0].model == o.verdicts.top_model;
        offer(names_top && spatial_model(o.verdicts.top_model), sig.tolerance_fail_count, sig.bitwise_mismatch_count,
              {r.record, out});
        // The detection shown for the output: a call that names the top
        // model, the one with most mismatches (the clearest evidence).
        if (names_top && (!have || sig.bitwise_mismatch_count > best_mism)) {
          o.detection = d;
          o.detection_record = r.record;
          best_mism = sig.bitwise_mismatch_count;
          have = true;
        }
      }
      c.ops.push_back(std::move(o));
    }
  }
  c.focus = best.call;
  if (CandidatePlayback* old = find_by_name(model_.candidates, c.name))
    *old = std::move(c);
  else
    model_.candidates.push_back(std::move(c));
}

FocusCall Report::focus_call(const std::string& candidate) const {
  const std::string name = candidate_name(candidate);
  for (const CandidatePlayback& c : model_.candidates)
    if (c.name == name) {
      if (!c.focus) fail(PEAT_STATUS_NOT_FOUND, "candidate '{}': no replayed call differs from golden", name);
      return *c.focus;
    }
  fail(PEAT_STATUS_NOT_FOUND, "no playback of candidate '{}' was added", name);
}

void Report::add_candidate_map(const std::string& candidate, const std::string& label, const peat_spatial_map_t& map) {
  CandidateMap m{candidate_name(candidate), copy_map(label, map)};
  for (CandidateMap& old : model_.candidate_maps)
    if (old.candidate == m.candidate) {
      old = std::move(m);
      return;
    }
  model_.candidate_maps.push_back(std::move(m));
}

void Report::add_noise_band(const std::string& stage, const analyzer::NoiseBand& source) {
  auto band = std::make_shared<const analyzer::NoiseBand>(source);  // the caller keeps its own
  const peat_noise_band_info_t info = band->info();
  if (info.reruns == 0) fail(PEAT_STATUS_BAD_STATE, "the noise band of stage '{}' has no golden rerun", stage);
  StageBand b;
  b.stage = stage.empty() ? "train" : stage;
  const std::vector<double>& ref = band->reference();
  b.golden.label = "golden";
  b.golden.y = ref;
  for (std::size_t i = 0; i < ref.size(); ++i) b.golden.x.push_back(static_cast<double>(i));
  b.band = info.band;
  b.k = info.reruns;
  b.factor = info.factor;
  b.window = info.window;
  b.judge = std::move(band);
  set_band(std::move(b));
}

void Report::set_band(StageBand band) {
  for (StageBand& old : model_.bands)
    if (old.stage == band.stage) {
      old = std::move(band);
      return;
    }
  model_.bands.push_back(std::move(band));
}

void Report::add_fi_run(FiRun run, const int64_t* steps, double param_drift) {
  run.candidate = candidate_name(run.candidate);
  if (run.stage.empty()) run.stage = "train";
  if (run.label.empty())
    run.label = run.every ? run.candidate + " 1/" + std::to_string(run.every) : run.candidate;
  if (!run.impact && !run.loss.y.empty())
    for (const StageBand& b : model_.bands)
      if (b.stage == run.stage && b.judge)
        run.impact = b.judge->judge(run.loss.y.data(), run.loss.y.size(), steps, param_drift);
  model_.fi_runs.push_back(std::move(run));
}

}  // namespace peat::impl::report
