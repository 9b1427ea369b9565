// host_problem.hpp — how the host-side planning headers shared by lib/ and the
// GPU plugins (inject_plan.hpp, signature_plan.hpp) report a failed check:
// a status and a message naming the field, returned, never thrown (lib/
// throws it as peat::Error, a plugin returns it through its table). C++17.
#pragma once

#include <peat/core.h>

#include <fmt/format.h>

#include <string>
#include <utility>

namespace peat {

struct Problem {
  peat_status_t status = PEAT_STATUS_OK;
  std::string message;  // empty when OK
  bool ok() const { return status == PEAT_STATUS_OK; }
};

template <typename... Args>
Problem problem(peat_status_t status, fmt::format_string<Args...> format, Args&&... args) {
  return Problem{status, fmt::format(format, std::forward<Args>(args)...)};
}

}  // namespace peat

// Returns the Problem of `expr` from the enclosing function when it is not OK.
#define PEAT_PROBLEM_TRY(expr)             \
  do {                                     \
    ::peat::Problem peat_problem_ = (expr); \
    if (!peat_problem_.ok()) return peat_problem_; \
  } while (0)
