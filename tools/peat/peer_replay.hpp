// Peer replay (`mpirun -n N peat playback --peer TRACE...`): every rank
// replays every rank's recorded calls on its own device with the kernel that
// ran in training, and rank 0 classifies, per trace, what the recorded
// outputs do (docs/distributed.md):
//   PERSISTENT  reproduced on the recording rank's own device only: that
//               device computes wrongly, every time (a device fault);
//   TRANSIENT   reproduced on no device, its own included: a one-off at
//               recording time;
//   KERNEL      reproduced on every device: no device fault; what the outputs
//               hold is what the kernel computes anywhere;
//   MIXED       anything else (some peers reproduce, some do not).
// The evidence of a class other than KERNEL is the Detector's per-call
// verdict on the peers' replays (e.g. STUCK_AT, bit 21).
#pragma once

#include "tools/peat/replay.hpp"

#include <string>
#include <vector>

namespace peat::cli {

struct PeerOptions {
  std::vector<std::string> traces;
  ReplayOptions replay;  // candidate, op filter, steps
  bool json = false;
  double timeout_s = 120;
};

int run_peer_replay(const PeerOptions& options);

}  // namespace peat::cli
