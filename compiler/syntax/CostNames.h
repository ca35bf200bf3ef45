// The names a `costs { }` block, `--cost` and `--costs` accept. Sub-operation
// costs (`attn_f` ... `combine_b`) decide how long an overlap pair takes.
// `activation_bytes_w` is the part of `activation_bytes` a split backward keeps
// from its I until its W (the zero-bubble papers' accounting); I frees the rest.
// `R` is a recomputation's duration (by default its stage's F); `input_bytes` is
// the part of `activation_bytes` a recomputed forward keeps (its stage input).
// `Offload` and `Reload` are the copy-stream durations of moving a stage's
// activation to host memory and back (default: activation_bytes /
// host_bandwidth when both are given, else the stage's F); `Evict` and `Load`
// the link times of moving it to a partner rank and back (default: p2p +
// activation_bytes / bandwidth when both are given, else the stage's F).
// `comm_sm_share` is the share of a GPU's SMs its communication sub-operations
// (dispatch, combine) hold while they run; compute overlapped with them runs at
// 1 - share of its speed meanwhile (OverlapPlan.h). A fraction below 1.
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace pipec {

inline llvm::ArrayRef<llvm::StringRef> costNames() {
  static const llvm::StringRef kNames[] = {
      "F",          "B",          "I",     "W",     "FB",        "p2p",       "bandwidth",
      "activation_bytes", "param_bytes", "attn_f", "attn_b", "dispatch_f", "dispatch_b",
      "mlp_f",      "mlp_b",      "combine_f", "combine_b", "activation_bytes_w", "R", "input_bytes",
      "Offload",    "Reload",     "Evict", "Load",  "host_bandwidth", "comm_sm_share"};
  return kNames;
}

} // namespace pipec
