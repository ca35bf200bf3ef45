#include "syntax/AST.h"

namespace pipec::ast {

const char *opKindName(OpKind kind) {
  switch (kind) {
  case OpKind::F: return "F";
  case OpKind::B: return "B";
  case OpKind::I: return "I";
  case OpKind::W: return "W";
  case OpKind::R: return "R";
  }
  return "?";
}

} // namespace pipec::ast
