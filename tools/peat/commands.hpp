// The subcommands of `peat`. Each registers itself on the app and returns the
// function main runs when that subcommand was given (it returns the exit code
// or throws CliError).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <utility>

namespace peat::cli {

using Command = std::pair<CLI::App*, std::function<int()>>;

Command add_info(CLI::App& app);
Command add_verify(CLI::App& app);
Command add_playback(CLI::App& app);
Command add_compare(CLI::App& app);
Command add_report(CLI::App& app);
Command add_demo(CLI::App& app);

}  // namespace peat::cli
