#include "tools/peat/peer_replay.hpp"

#include "tools/peat/ranks.hpp"
#include "tools/peat/rank_set.hpp"
#include "tools/peat/verdicts.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

namespace peat::cli {

namespace {

int32_t beat(void*, uint64_t, uint64_t) {
  Ranks::instance().heartbeat();
  return 0;
}

// What one device found replaying one trace: the records it did not
// reproduce bit for bit, and per op its per-call verdict.
nlohmann::json replay_on_this_device(const RankTrace& trace, const ReplayOptions& base) {
  ReplayOptions ro = base;
  ro.progress = false;
  ro.progress_fn = beat;
  Replay replay(trace.reader, trace.path, ro);
  const peat::playback& playback = replay.playback();
  const uint64_t n = checked(trace.path, [&] { return playback.result_count(); });
  nlohmann::json differ = nlohmann::json::array(), failed = nlohmann::json::array();
  for (uint64_t i = 0; i < n; ++i) {
    const peat_playback_result_t r = checked(trace.path, [&] { return playback.result(i); });
    if (r.status != PEAT_STATUS_OK) failed.push_back(r.record);
    else if (r.bitwise_mismatches > 0) differ.push_back(r.record);
  }
  nlohmann::json ops = nlohmann::json::array();
  for (const OpVerdict& v : replay.ops()) {
    const uint64_t mismatched = v.group.ok - v.group.exact;
    if (mismatched == 0) continue;
    ops.push_back({{"op", v.op},
                   {"mismatched", mismatched},
                   {"top", v.per_call.top_model >= 0 ? peat_error_model_name(v.per_call.top_model) : ""},
                   {"bits", bits_of(v.per_call.bits)}});
  }
  return {{"records", n}, {"differ", differ}, {"failed", failed}, {"ops", ops}};
}

struct Classified {
  std::string cls;
  uint64_t suspect = 0;  // records some device did not reproduce
  std::map<std::string, uint64_t> counts;
  std::vector<int> reproduced_on;  // devices that reproduced every suspect record
  std::vector<int> deviating;      // peers that did not reproduce most suspect records
  nlohmann::json evidence;
};

Classified classify(int own, int devices, const std::vector<std::set<uint64_t>>& differ,
                    const std::vector<nlohmann::json>& per_device) {
  Classified c;
  std::set<uint64_t> suspect;
  for (const auto& d : differ) suspect.insert(d.begin(), d.end());
  c.suspect = suspect.size();
  for (int d = 0; d < devices; ++d) {
    bool all = true;
    for (uint64_t rec : suspect) all = all && !differ[static_cast<std::size_t>(d)].count(rec);
    if (all) c.reproduced_on.push_back(d);
  }
  if (suspect.empty()) {
    c.cls = "KERNEL";
    return c;
  }
  std::map<int, uint64_t> deviating;
  for (uint64_t rec : suspect) {
    const bool own_reproduces = own >= 0 && own < devices && !differ[static_cast<std::size_t>(own)].count(rec);
    int reproducing = 0;
    bool peers_fail = true;
    for (int d = 0; d < devices; ++d) {
      const bool reproduces = !differ[static_cast<std::size_t>(d)].count(rec);
      reproducing += reproduces ? 1 : 0;
      if (d != own && reproduces) peers_fail = false;
      if (!reproduces) ++deviating[d];
    }
    // A record most devices reproduce, its own device included, is what the
    // kernel computes: the devices that differ are the odd ones, not this rank.
    const char* cls = reproducing == 0                            ? "TRANSIENT"
                      : own_reproduces && peers_fail && devices > 1 ? "PERSISTENT"
                      : own_reproduces && 2 * reproducing > devices ? "KERNEL"
                                                                    : "MIXED";
    ++c.counts[cls];
  }
  for (const auto& [d, n] : deviating)
    if (2 * n > suspect.size() && d != own) c.deviating.push_back(d);
  c.cls = std::max_element(c.counts.begin(), c.counts.end(), [](const auto& a, const auto& b) {
            return a.second < b.second || (a.second == b.second && a.first > b.first);
          })->first;
  if (c.cls == "KERNEL") return c;  // no evidence against this rank
  // Evidence: the peer (not the own device) with the most differing records,
  // and its op with the most; its per-call verdict and bits.
  int best = -1;
  std::size_t most = 0;
  for (int d = 0; d < devices; ++d)
    if (d != own && differ[static_cast<std::size_t>(d)].size() > most) {
      best = d;
      most = differ[static_cast<std::size_t>(d)].size();
    }
  if (best < 0 && own >= 0 && own < devices) best = own;
  if (best >= 0) {
    const nlohmann::json& ops = per_device[static_cast<std::size_t>(best)]["ops"];
    const nlohmann::json* top = nullptr;
    for (const auto& o : ops)
      if (top == nullptr || o["mismatched"].get<uint64_t>() > (*top)["mismatched"].get<uint64_t>()) top = &o;
    nlohmann::json models = nlohmann::json::object();
    for (const auto& o : ops) {
      const std::string m = o["top"].get<std::string>();
      if (!m.empty()) models[m] = models.value(m, 0) + o["mismatched"].get<uint64_t>();
    }
    c.evidence = {{"device", best}, {"models", models}};
    if (top != nullptr) c.evidence["op"] = *top;
  }
  return c;
}

}  // namespace

int run_peer_replay(const PeerOptions& opt) {
  Ranks& ranks = Ranks::instance();
  if (ranks.world() < 2)
    throw CliError(kUsage, "--peer needs at least 2 devices: run it under mpirun -n N (N >= 2), one rank per device");
  const std::vector<RankTrace> set = open_rank_set(opt.traces, /*by_position=*/true);
  nlohmann::json mine = nlohmann::json::array();
  for (const RankTrace& t : set) mine.push_back(replay_on_this_device(t, opt.replay));
  const std::string text = mine.dump();
  std::vector<std::byte> bytes(text.size());
  std::transform(text.begin(), text.end(), bytes.begin(), [](char ch) { return static_cast<std::byte>(ch); });
  std::vector<Ranks::Part> parts = ranks.gather(std::move(bytes), opt.timeout_s);
  if (!ranks.root()) return kOk;

  const int devices = ranks.world();
  std::vector<nlohmann::json> found(static_cast<std::size_t>(devices));
  std::vector<std::string> lost;
  for (int d = 0; d < devices; ++d) {
    const Ranks::Part& p = parts[static_cast<std::size_t>(d)];
    if (!p.received) {
      lost.push_back(p.why);
      continue;
    }
    std::string s(p.bytes.size(), '\0');
    std::transform(p.bytes.begin(), p.bytes.end(), s.begin(), [](std::byte b) { return static_cast<char>(b); });
    found[static_cast<std::size_t>(d)] = nlohmann::json::parse(s);
  }
  if (!lost.empty()) throw CliError(kFindings, "peer replay needs every device: " + lost.front());

  nlohmann::json out;
  out["schema_version"] = 1;
  out["command"] = "playback --peer";
  out["candidate"] = opt.replay.candidate;
  out["devices"] = devices;
  nlohmann::json traces = nlohmann::json::array(), faulty = nlohmann::json::array();
  for (std::size_t t = 0; t < set.size(); ++t) {
    std::vector<std::set<uint64_t>> differ(static_cast<std::size_t>(devices));
    std::vector<nlohmann::json> per_device(static_cast<std::size_t>(devices));
    for (int d = 0; d < devices; ++d) {
      per_device[static_cast<std::size_t>(d)] = found[static_cast<std::size_t>(d)][t];
      for (const auto& rec : per_device[static_cast<std::size_t>(d)]["differ"])
        differ[static_cast<std::size_t>(d)].insert(rec.get<uint64_t>());
    }
    const int own = set[t].rank < devices ? set[t].rank : -1;
    const Classified c = classify(own, devices, differ, per_device);
    nlohmann::json j = {{"trace", set[t].path},
                        {"rank", set[t].rank},
                        {"class", c.cls},
                        {"records", per_device[0]["records"]},
                        {"suspect_records", c.suspect},
                        {"class_counts", c.counts},
                        {"reproduced_on", c.reproduced_on},
                        {"deviating_devices", c.deviating}};
    nlohmann::json differ_counts = nlohmann::json::array();
    for (int d = 0; d < devices; ++d) differ_counts.push_back(differ[static_cast<std::size_t>(d)].size());
    j["differ_per_device"] = differ_counts;
    if (!c.evidence.is_null()) j["evidence"] = c.evidence;
    if (c.cls == "PERSISTENT") faulty.push_back(set[t].rank);
    traces.push_back(std::move(j));
  }
  out["traces"] = traces;
  out["faulty_ranks"] = faulty;
  if (opt.json) {
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::printf("peer replay of %zu rank traces on %d devices with %s\n", set.size(), devices,
                opt.replay.candidate.c_str());
    for (const auto& j : traces) {
      std::printf("rank %d (%s): %s", j["rank"].get<int>(), printable(j["trace"].get<std::string>()).c_str(),
                  j["class"].get<std::string>().c_str());
      const std::string cls = j["class"].get<std::string>();
      if (cls == "KERNEL") {
        std::string odd;
        for (const auto& d : j["deviating_devices"]) odd += (odd.empty() ? "" : ",") + std::to_string(d.get<int>());
        std::printf(" -- its own device and most peers reproduce its %llu records%s\n",
                    static_cast<unsigned long long>(j["records"].get<uint64_t>()),
                    odd.empty() ? "" : ("; devices {" + odd + "} do not").c_str());
        continue;
      }
      std::printf(" -- %llu of %llu records differ on replay; devices differing per record count:",
                  static_cast<unsigned long long>(j["suspect_records"].get<uint64_t>()),
                  static_cast<unsigned long long>(j["records"].get<uint64_t>()));
      for (const auto& n : j["differ_per_device"]) std::printf(" %llu", static_cast<unsigned long long>(n.get<uint64_t>()));
      if (j.contains("evidence") && j["evidence"].contains("op")) {
        const auto& e = j["evidence"];
        std::string bits;
        for (const auto& b : e["op"]["bits"]) bits += (bits.empty() ? "" : ",") + std::to_string(b.get<int>());
        std::printf("; evidence (device %d): %s %s bits {%s}", e["device"].get<int>(),
                    printable(e["op"]["op"].get<std::string>()).c_str(), e["op"]["top"].get<std::string>().c_str(),
                    bits.c_str());
      }
      std::printf("\n");
    }
  }
  return faulty.empty() ? kOk : kFindings;
}

}  // namespace peat::cli
