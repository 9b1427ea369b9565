// Playback as the C API shows it (peat/playback.h): the defaults of its
// options and the C structs filled from its results and groups.
#pragma once

#include <peat/playback.h>

#include "lib/playback/playback.hpp"

namespace peat::impl::playback {

peat_playback_options_t default_options() noexcept;
peat_playback_summary_t summary_view(const Summary& s);
// The C views borrow the strings of `r` / `g` (valid while the playback lives).
peat_playback_result_t result_view(const Result& r);
peat_playback_group_t group_view(const Group& g, peat_playback_group_kind_t kind);

}  // namespace peat::impl::playback
