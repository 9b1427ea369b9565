// Op-name globs of the injector's policies and candidates: '*' matches any run
// of characters, '?' one character, [abc] / [a-z] / [!a-z] (or [^a-z]) a set,
// and '\' makes the next character literal.
#pragma once

#include <string_view>

namespace peat::impl::injector {

// Throws INVALID_ARGUMENT naming `what` when `pattern` is malformed: empty,
// an unterminated '[' set, an empty set "[]", a reversed range "[z-a]", or a
// trailing '\'.
void validate_glob(std::string_view pattern, std::string_view what);

// Whether `name` matches the (valid) `pattern` as a whole.
bool glob_match(std::string_view pattern, std::string_view name) noexcept;

}  // namespace peat::impl::injector
