// The sub-operations a stage's forward and backward are split into, so that an
// executor can interleave two micro-batches in an overlap pair (DeepSeek-V3
// report, Figure 4): the compute of one hides the communication of the other.
//   forward : Attention -> Dispatch -> Mlp -> Combine
//   backward: Combine -> Mlp -> Dispatch -> Attention
// Dispatch and Combine are the expert-parallel all-to-alls of an MoE stage (and
// identity for a dense stage); Attention and Mlp are compute.
//
// The one definition of the split: the compiler's cost model and overlap plans
// use this enum too (pipec::SubOp is an alias), so the sub-operations a plan
// orders are the ones the runtime runs.
#pragma once

#include <array>
#include <cstdint>

namespace pipert {

enum class SubOp : uint8_t { Attention, Dispatch, Mlp, Combine };

constexpr std::array<SubOp, 4> kForwardParts = {SubOp::Attention, SubOp::Dispatch, SubOp::Mlp, SubOp::Combine};
constexpr std::array<SubOp, 4> kBackwardParts = {SubOp::Combine, SubOp::Mlp, SubOp::Dispatch, SubOp::Attention};

// Position of `part` in kForwardParts / kBackwardParts.
constexpr int forwardPosition(SubOp part) { return static_cast<int>(part); }
constexpr int backwardPosition(SubOp part) { return 3 - static_cast<int>(part); }

const char *subOpName(SubOp part); // (defined in the runtime library) "attention", "dispatch", "mlp", "combine"

// Whether a backward part also accumulates the weight gradients (full B) or
// leaves them to a later backwardWeight (the I half of a zero-bubble split).
enum class WeightGrad { Now, Deferred };

} // namespace pipert
