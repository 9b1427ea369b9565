// Analyzing a (golden, candidate) pair into a caller's signature and map, and
// accumulating one more (golden, candidate) pair into a running signature and
// spatial map: the body of peat_analyze_accumulate and of the CPU backend's
// signature_accumulate entry, written once.
#pragma once

#include <peat/analyzer.h>

namespace peat::impl::analyzer {

// Checks every argument first (NULL signature, struct sizes by the versioned
// rule, map size and overlap with the signature), then analyzes host views
// and merges into *inout_signature (the caller's prefix) and *inout_map.
// Nothing is changed when it throws peat::impl::Error.
// peat_analyze: the same checks, then *out_signature (the caller's prefix)
// and *out_map are overwritten; the signature only once analyze() succeeded.
void analyze_to(const DLTensor* golden, const DLTensor* candidate, const peat_signature_config_t* config,
                peat_signature_t* out_signature, peat_spatial_map_t* out_map);

// peat_spatial_map_shape: the map geometry analyze_to would give (any out may be NULL).
void spatial_shape(const DLTensor* golden, const peat_signature_config_t* config, int64_t* rows, int64_t* cols,
                   int64_t* tiles);

void accumulate(const DLTensor* golden, const DLTensor* candidate, const peat_signature_config_t* config,
                peat_signature_t* inout_signature, peat_spatial_map_t* inout_map);

}  // namespace peat::impl::analyzer
