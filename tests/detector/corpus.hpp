// The Detector's labeled corpus: cases with known truth (injector models on
// random tensors and on GEMM / convolution outputs computed here, plus
// legitimate candidate kernels), scored by peat_detect. Shared by the ctest
// slice (tests/detector) and the full-corpus benchmark (benchmarks/detector).
// Uses only the public C API of libpeat.
#pragma once
#include <peat/peat.h>

#include <array>
#include <map>
#include <cstdint>
#include <string>
#include <vector>

namespace peat_corpus {

constexpr int kModels = 13;  // PEAT_ERROR_MODEL_EXACT .. UNKNOWN

struct Config {
  std::vector<int64_t> sizes;       // element counts of the random tensors
  int seeds = 3;                    // seeds per (size, dtype, model) for sizes <= 65536
  int big_seeds = 1;                // seeds per (size, dtype, model) above 65536
  int kernel_seeds = 3;             // seeds per (dtype, kernel case)
  int family_seeds = 3;             // seeds per (dtype, family generator)
  int max_gemm = 48;                // largest M, N of the GEMM cases
  int max_k = 256;                  // largest K
  uint64_t base_seed = 20261202;
  bool verbose = false;             // print every misclassified case
};

struct Result {
  std::array<std::array<uint64_t, kModels>, kModels> confusion{};  // [truth][top verdict]
  uint64_t cases = 0;
  uint64_t correct = 0;
  uint64_t exp_sign_flip_cases = 0;        // cases whose truth flips a sign or exponent bit
  uint64_t exp_sign_flip_missed = 0;       // ... reported only as EXACT / ROUNDING
  uint64_t noise_flip_cases = 0;           // bit flips injected on top of rounding noise
  uint64_t noise_flip_both = 0;            // ... reported as bit flip first and ROUNDING later
  uint64_t detect_errors = 0;              // peat_detect returned an error
  std::vector<std::string> misses;         // descriptions of misclassified cases (first 200)
  // Per family ("injected", "kernel", "composite", "merged_calls", "non_gemm",
  // "few_outputs", "sparse", "formats", "nondeterminism"): {cases, correct}.
  std::map<std::string, std::array<uint64_t, 2>> families;

  double accuracy() const { return cases ? static_cast<double>(correct) / static_cast<double>(cases) : 0; }
  // Recall of each model that has cases (-1 for models without cases).
  double recall(int model) const;
  double min_recall() const;
  double family_accuracy(const std::string& family) const;
  double min_family_accuracy() const;
};

Result run(const Config& config);
std::string format_matrix(const Result& result);

// The ctest slice and the full corpus.
Config slice_config();
Config full_config();

}  // namespace peat_corpus
