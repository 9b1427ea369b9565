// peat demo: what `make demo` runs — the examples/cpp_trainer peat_demo
// program (found next to this tool, or in the build tree), then the HTML
// report of its outputs.
#include "tools/peat/commands.hpp"
#include "tools/peat/common.hpp"
#include "tools/peat/report_writer.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <memory>
#include <vector>

extern char** environ;

namespace peat::cli {

namespace fs = std::filesystem;

namespace {

struct Options {
  std::string out = "demo-out", demo_path;
  std::vector<std::string> extra;
};

fs::path find_demo(const std::string& given) {
  if (!given.empty()) {
    if (!fs::exists(given)) throw CliError(kBadInput, given + ": no such file");
    return given;
  }
  const fs::path self = fs::canonical("/proc/self/exe").parent_path();
  for (const fs::path& p : {self / "peat_demo", self / ".." / ".." / "examples" / "cpp_trainer" / "peat_demo",
                            self / ".." / "examples" / "cpp_trainer" / "peat_demo", self / ".." / "libexec" / "peat" / "peat_demo"})
    if (fs::exists(p)) return fs::canonical(p);
  throw CliError(kBadInput, "peat_demo not found next to " + self.string() +
                                " or in the build tree (build it with `make build`, or pass --demo PATH)");
}

int run(const Options& opt) {
  const fs::path demo = find_demo(opt.demo_path);
  std::vector<std::string> args = {demo.string(), "--out", opt.out};
  args.insert(args.end(), opt.extra.begin(), opt.extra.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    throw CliError(kBadInput, demo.string() + ": cannot start");
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw CliError(kInternal, demo.string() + " failed (exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
  ReportRequest r;
  const fs::path out(opt.out);
  r.inputs = {(out / "golden.peat").string(), (out / "playback.jsonl").string(), (out / "report.json").string()};
  const fs::path lib = demo.parent_path().parent_path() / "candidates" / "libpeat_candidates.so";
  if (fs::exists(lib))
    // Every candidate the demo plays back: the report judges each call of each.
    for (const char* c : {"peat_cand_blocked", "peat_cand_pairwise", "peat_cand_bf16", "peat_cand_tf32", "peat_cand_fp16acc",
                          "peat_cand_splitk_racy", "peat_cand_tile_drop", "peat_cand_no_alpha", "peat_cand_stuck_bit27"})
      r.candidates.push_back(lib.string() + ":" + c + "_kernel");
  r.output = (out / "report.html").string();
  r.title = "PEAT demo report";
  return write_report(r);
}

}  // namespace

Command add_demo(CLI::App& app) {
  auto* sub = app.add_subcommand("demo", "Run the end-to-end demo (what `make demo` runs) and write its HTML report");
  auto o = std::make_shared<Options>();
  sub->add_option("--out", o->out, "output folder (default demo-out)");
  sub->add_option("--demo", o->demo_path, "path of the peat_demo program (default: next to peat or in the build tree)");
  sub->add_option("DEMO_ARGS", o->extra, "arguments after -- go to peat_demo (e.g. -- --epochs 1)");
  return {sub, [o] { return run(*o); }};
}

}  // namespace peat::cli
