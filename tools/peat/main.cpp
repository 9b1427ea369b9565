// peat — the command-line tool of PEAT (docs/cli.md): inspect, verify and
// recover traces, play candidates back, compare traces of two stacks, write
// the HTML report, run the demo. Exit codes: common.hpp / `peat --help`.
#include "tools/peat/commands.hpp"
#include "tools/peat/common.hpp"
#include "tools/peat/ranks.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace {

int run(int argc, char** argv) {
  using namespace peat::cli;
  CLI::App app{"peat: pseudo-error assessment of kernel implementations in DNN training (libpeat " +
               std::string(peat_version_string()) + ")"};
  app.require_subcommand(1);
  app.footer(kExitCodesHelp);
  app.set_version_flag("--version", std::string(peat_version_string()));
  std::vector<Command> commands = {add_info(app),   add_verify(app), add_playback(app),
                                   add_compare(app), add_report(app), add_demo(app)};
  for (auto& [sub, fn] : commands) sub->footer(kExitCodesHelp);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string where = "peat";
    for (auto& [sub, fn] : commands)
      if (sub->parsed()) where += " " + sub->get_name();
    std::fprintf(stderr, "%s: %s (see %s --help)\n", where.c_str(), one_line(e.what()).c_str(), where.c_str());
    return kUsage;
  }
  for (auto& [sub, fn] : commands) {
    if (!sub->parsed()) continue;
    // Under MPI an error names the rank, and rank 0 hears of it (it stops waiting for this rank).
    Ranks& ranks = Ranks::instance();
    const std::string who = ranks.world() > 1 ? " (rank " + std::to_string(ranks.rank()) + ")" : std::string();
    try {
      return fn();
    } catch (const CliError& e) {
      std::fflush(stdout);
      std::fprintf(stderr, "peat %s%s: %s\n", sub->get_name().c_str(), who.c_str(), one_line(e.what()).c_str());
      ranks.report_failure(one_line(e.what()));
      return e.code();
    } catch (const std::exception& e) {
      std::fflush(stdout);
      std::fprintf(stderr, "peat %s%s: internal error: %s\n", sub->get_name().c_str(), who.c_str(),
                   one_line(e.what()).c_str());
      ranks.report_failure("internal error: " + one_line(e.what()));
      return kInternal;
    }
  }
  return kUsage;
}

}  // namespace

int main(int argc, char** argv) {
  peat::cli::Ranks& ranks = peat::cli::Ranks::instance();
  ranks.init(&argc, &argv);
  return ranks.finish(run(argc, argv));
}
