// Op-name clustering for `peat compare`: op names that denote the same
// operation on different stacks (aten::mm, mm, cublasSgemm_v2, hipblasSgemm,
// gemm, matmul, sgemm) map to one family ("gemm"). The family rule lives in
// the library (peat_op_family, peat/detector.h), which also infers the op
// kind from it; docs/cli.md lists the rules.
#pragma once

#include <string>
#include <string_view>

namespace peat::cli {

// The library's family of an op name (peat_op_family).
std::string op_family(std::string_view name);

// Layer path as compared across stacks: lower case, a leading "model." or
// "module." (wrappers such as DataParallel add one) removed.
std::string normalise_layer(std::string_view layer);

}  // namespace peat::cli
