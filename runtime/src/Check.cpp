// The slow path of PIPERT_CHECK, out of line so the macro stays small.
#include "pipert/Check.h"

namespace pipert {

void throwInvariant(const char *file, int line, const std::string &what) {
  throw std::logic_error(std::string("pipert internal error at ") + file + ":" + std::to_string(line) +
                         ": " + what);
}

} // namespace pipert
