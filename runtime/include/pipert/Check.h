// Error conventions of the runtime. Two kinds, two exception types:
//  - a caller's mistake in sizes or configuration (zero hidden size, experts not
//    divisible by the expert-parallel size, a wrongly shaped input) throws
//    std::invalid_argument with a message naming the value and the rule;
//  - a broken internal invariant or a misuse of the per-micro-batch protocol
//    (backward before forward, parts out of order) throws std::logic_error
//    carrying file:line.
// Nothing aborts: an executor runs stages on rank threads and must be able to
// report the failure of one rank instead of taking the process down.
#pragma once

#include <stdexcept>
#include <string>

namespace pipert {

[[noreturn]] void throwInvariant(const char *file, int line, const std::string &what);

} // namespace pipert

#define PIPERT_CHECK(cond, msg)                                                                    \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::pipert::throwInvariant(__FILE__, __LINE__, std::string(#cond ": ") + (msg));               \
  } while (0)
