// peat verify TRACE [--recover OUT]: checks every frame, FlatBuffer and
// tensor checksum; with --recover, copies the intact records of a trace whose
// writer was killed into a new, complete trace OUT.
#include "tools/peat/commands.hpp"
#include "tools/peat/common.hpp"

#include <cstdio>
#include <memory>
#include <optional>

namespace peat::cli {

namespace {

// Skipped records of an open reader (intact frames this reader cannot use).
uint64_t skipped(const peat::trace_reader& r, const std::string& path, std::string& first) {
  const char* why = nullptr;
  const uint64_t n = checked(path, [&] { return r.skipped(&why); });
  first = why ? why : "";
  return n;
}

int run(const std::string& path, const std::string& recover_out) {
  if (!recover_out.empty()) {
    peat_trace_recovery_t rec{};
    const peat::trace_reader reader = checked(path, [&] { return peat::trace_reader::recover(path.c_str(), &rec); });
    // The intact records are copied byte for byte (every value and unix_ns as
    // recorded); a record whose payload is damaged is left out, not the rest.
    uint64_t written = 0, dropped = 0;
    try {
      written = reader.copy_intact(recover_out.c_str(), &dropped);
    } catch (const peat::error& e) {
      // OUT is the problem, not the trace: the library's message names it.
      const peat_status_t s = e.status();
      if (s == PEAT_STATUS_INVALID_ARGUMENT || s == PEAT_STATUS_NOT_FOUND || s == PEAT_STATUS_IO_ERROR)
        throw CliError(kBadInput, library_message(e));
      throw cli_error(e, path);
    }
    std::string first;
    const uint64_t n_skipped = skipped(reader, path, first);
    std::printf("%s: %s; %llu intact records (%llu of %llu bytes)%s%s\n", path.c_str(),
                rec.complete ? "complete" : "incomplete", static_cast<unsigned long long>(rec.records),
                static_cast<unsigned long long>(rec.valid_bytes), static_cast<unsigned long long>(rec.file_bytes),
                *rec.stop_reason ? "; " : "", rec.stop_reason);
    std::printf("recovered %llu records -> %s", static_cast<unsigned long long>(written), recover_out.c_str());
    if (dropped) std::printf("; %llu record(s) with a damaged payload left out", static_cast<unsigned long long>(dropped));
    std::printf("\n");
    return rec.complete && dropped == 0 && n_skipped == 0 ? kOk : kFindings;
  }
  // Damaged or truncated: a finding of verify, not a usage error.
  std::optional<peat::trace_reader> reader;
  try {
    reader.emplace(path.c_str());
  } catch (const peat::error& e) {
    if (e.status() != PEAT_STATUS_CORRUPT_DATA) throw cli_error(e, path);
    std::fprintf(stderr, "peat verify: %s (recover the intact records with --recover OUT)\n",
                 library_message(e).c_str());
    return kFindings;
  }
  const uint64_t n = checked(path, [&] { return reader->record_count(); });
  uint64_t tensors = 0;
  try {
    tensors = reader->verify();
  } catch (const peat::error& e) {
    if (e.status() != PEAT_STATUS_CORRUPT_DATA) throw cli_error(e, path);
    std::fprintf(stderr, "peat verify: %s\n", library_message(e).c_str());
    return kFindings;
  }
  std::string first;
  if (const uint64_t k = skipped(*reader, path, first); k > 0) {
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
