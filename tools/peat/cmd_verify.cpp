// peat verify TRACE [--recover OUT]: checks every frame, FlatBuffer and
// tensor checksum; with --recover, copies the intact records of a trace whose
// writer was killed into a new, complete trace OUT.
#include "tools/peat/commands.hpp"
#include "tools/peat/common.hpp"

#include <cstdio>
#include <memory>

namespace peat::cli {

namespace {

// Skipped records of an open reader (intact frames this reader cannot use).
uint64_t skipped(const peat_trace_reader_t* r, const std::string& path, std::string& first) {
  uint64_t n = 0;
  const char* why = nullptr;
  check(peat_trace_skipped(r, &n, &why), path);
  first = why ? why : "";
  return n;
}

int run(const std::string& path, const std::string& recover_out) {
  if (!recover_out.empty()) {
    peat_trace_reader_t* raw = nullptr;
    peat_trace_recovery_t rec{};
    rec.struct_size = sizeof rec;
    check(peat_trace_recover(path.c_str(), nullptr, &raw, &rec), path);
    TraceReader reader(raw);
    // The intact records are copied byte for byte (every value and unix_ns as
    // recorded); a record whose payload is damaged is left out, not the rest.
    uint64_t written = 0, dropped = 0;
    const peat_status_t s = peat_trace_copy_intact(reader.get(), recover_out.c_str(), &written, &dropped);
    if (s == PEAT_STATUS_INVALID_ARGUMENT || s == PEAT_STATUS_NOT_FOUND || s == PEAT_STATUS_IO_ERROR)
      throw CliError(kBadInput, one_line(library_message()));
    check(s, path);
    std::string first;
    const uint64_t n_skipped = skipped(reader.get(), path, first);
    std::printf("%s: %s; %llu intact records (%llu of %llu bytes)%s%s\n", path.c_str(),
                rec.complete ? "complete" : "incomplete", static_cast<unsigned long long>(rec.records),
                static_cast<unsigned long long>(rec.valid_bytes), static_cast<unsigned long long>(rec.file_bytes),
                *rec.stop_reason ? "; " : "", rec.stop_reason);
    std::printf("recovered %llu records -> %s", static_cast<unsigned long long>(written), recover_out.c_str());
    if (dropped) std::printf("; %llu record(s) with a damaged payload left out", static_cast<unsigned long long>(dropped));
    std::printf("\n");
    return rec.complete && dropped == 0 && n_skipped == 0 ? kOk : kFindings;
  }
  peat_trace_reader_t* raw = nullptr;
  const peat_status_t s = peat_trace_open(path.c_str(), nullptr, &raw);
  if (s == PEAT_STATUS_CORRUPT_DATA) {
    // Damaged or truncated: a finding of verify, not a usage error.
    std::fprintf(stderr, "peat verify: %s (recover the intact records with --recover OUT)\n",
                 library_message().c_str());
    return kFindings;
  }
  check(s, path);
  TraceReader reader(raw);
  uint64_t n = 0, tensors = 0;
  check(peat_trace_record_count(raw, &n), path);
  const peat_status_t v = peat_trace_verify(raw, &tensors);
  if (v == PEAT_STATUS_CORRUPT_DATA) {
    std::fprintf(stderr, "peat verify: %s\n", library_message().c_str());
    return kFindings;
  }
  check(v, path);
  std::string first;
  if (const uint64_t k = skipped(raw, path, first); k > 0) {
    std::fprintf(stderr, "peat verify: %s: %llu record(s) skipped, the first: %s\n", path.c_str(),
                 static_cast<unsigned long long>(k), first.c_str());
    return kFindings;
  }
  std::printf("%s: OK, %llu records, %llu tensors, every frame and checksum intact\n", path.c_str(),
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(tensors));
  return kOk;
}

}  // namespace

Command add_verify(CLI::App& app) {
  auto* sub = app.add_subcommand("verify", "Check every frame and checksum of a trace; recover a truncated one");
  auto path = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  sub->add_option("TRACE", *path, "trace file")->required();
  sub->add_option("--recover", *out, "write the intact records into a new, complete trace OUT (exit 1 when the input was incomplete)");
  return {sub, [path, out] { return run(*path, *out); }};
}

}  // namespace peat::cli
