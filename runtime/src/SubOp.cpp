// Names of the sub-operations, for messages and traces.
#include "pipert/SubOp.h"

namespace pipert {

const char *subOpName(SubOp part) {
  switch (part) {
  case SubOp::Attention: return "attention";
  case SubOp::Dispatch: return "dispatch";
  case SubOp::Mlp: return "mlp";
  case SubOp::Combine: return "combine";
  }
  return "?";
}

} // namespace pipert
