// Runs the Detector's labeled corpus and prints the confusion matrix.
//   peat_detector_corpus [--slice | --full] [--assert] [--verbose]
// --assert exits 1 unless accuracy >= 0.98, every model's recall and every family's accuracy >= 0.95 and
// no exponent/sign flip is reported only as EXACT or ROUNDING.
// One line "FAMILY <name> accuracy=<a> cases=<n>" per family, then the last line
// "RESULT accuracy=<a> min_recall=<r> cases=<n>".
#include "corpus.hpp"

#include <cstdio>
#include <cstring>
#include <exception>

int main(int argc, char** argv) {
  bool full = false, check = false, verbose = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--full") == 0) full = true;
    else if (std::strcmp(argv[i], "--slice") == 0) full = false;
    else if (std::strcmp(argv[i], "--assert") == 0) check = true;
    else if (std::strcmp(argv[i], "--verbose") == 0) verbose = true;
    else {
      std::fprintf(stderr, "usage: %s [--slice | --full] [--assert] [--verbose]\n", argv[0]);
      return 2;
    }
  }
  try {
    peat_corpus::Config cfg = full ? peat_corpus::full_config() : peat_corpus::slice_config();
    cfg.verbose = verbose;
    const peat_corpus::Result r = peat_corpus::run(cfg);
    for (const auto& m : r.misses) std::printf("miss: %s\n", m.c_str());
    std::printf("%s", peat_corpus::format_matrix(r).c_str());
    for (const auto& [name, n] : r.families)
      std::printf("FAMILY %s accuracy=%.6f cases=%llu\n", name.c_str(), r.family_accuracy(name),
                  static_cast<unsigned long long>(n[0]));
    std::printf("RESULT accuracy=%.6f min_recall=%.6f cases=%llu\n", r.accuracy(), r.min_recall(),
                static_cast<unsigned long long>(r.cases));
    if (check) {
      bool ok = true;
      if (r.accuracy() < 0.98) { std::printf("FAIL: accuracy %.4f < 0.98\n", r.accuracy()); ok = false; }
      if (r.min_recall() < 0.95) { std::printf("FAIL: min recall %.4f < 0.95\n", r.min_recall()); ok = false; }
      if (r.min_family_accuracy() < 0.95) {
        std::printf("FAIL: a family's accuracy %.4f < 0.95\n", r.min_family_accuracy());
        ok = false;
      }
      if (r.exp_sign_flip_missed != 0) {
        std::printf("FAIL: %llu exponent/sign flips reported only as EXACT/ROUNDING\n",
                    static_cast<unsigned long long>(r.exp_sign_flip_missed));
        ok = false;
      }
      if (r.detect_errors != 0) { std::printf("FAIL: peat_detect failed on %llu cases\n", static_cast<unsigned long long>(r.detect_errors)); ok = false; }
      if (r.noise_flip_both != r.noise_flip_cases) {
        std::printf("FAIL: %llu of %llu flips on rounding noise not reported as flip then ROUNDING\n",
                    static_cast<unsigned long long>(r.noise_flip_cases - r.noise_flip_both),
                    static_cast<unsigned long long>(r.noise_flip_cases));
        ok = false;
      }
      return ok ? 0 : 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "corpus: %s\n", e.what());
    return 1;
  }
}
