// Probing a backend plugin in a child process before the registry loads it
// into the host: a plugin whose static initialisers or entry point crash, or
// hang, is refused with a reason instead of taking the host process down.
#pragma once

#include <string>

namespace peat::impl::backend {

// Opens `path` in a forked child, calls its entry point and checks the table
// (validate_table). Returns "" when the plugin passed, or why it is refused
// (including "crashed ... signal N" and "did not finish within N s"). Skipped
// (returns "") when the environment sets PEAT_BACKEND_PROBE=0.
std::string probe_plugin(const std::string& path);

}  // namespace peat::impl::backend
