// Ranks without MPI (PEAT_WITH_MPI=OFF or no MPI found): one process.
#include "tools/peat/ranks.hpp"

namespace peat::cli {

Ranks& Ranks::instance() {
  static Ranks ranks;
  return ranks;
}

void Ranks::init(int*, char***) {}
int Ranks::finish(int code) { return code; }

std::vector<Ranks::Part> Ranks::gather(std::vector<std::byte> mine, double) {
  std::vector<Part> parts(1);
  parts[0].received = true;
  parts[0].bytes = std::move(mine);
  return parts;
}

void Ranks::heartbeat() {}
void Ranks::report_failure(const std::string&) {}

}  // namespace peat::cli
