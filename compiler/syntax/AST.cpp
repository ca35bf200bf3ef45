#include "syntax/AST.h"

namespace pipec::ast {

const char *opKindName(OpKind kind) {
  switch (kind) {
  case OpKind::F: return "F";
  case OpKind::B: return "B";
  case OpKind::I: return "I";
  case OpKind::W: return "W";
  case OpKind::R: return "R";
  case OpKind::Offload: return "Offload";
  case OpKind::Reload: return "Reload";
  case OpKind::Evict: return "Evict";
  case OpKind::Hold: return "Hold";
  case OpKind::Return: return "Return";
  case OpKind::Load: return "Load";
  }
  return "?";
}

} // namespace pipec::ast
