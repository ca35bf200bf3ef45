// AllToAll<T>: the expert-parallel exchange behind an MoE stage's Dispatch and
// Combine. An EP group has size() participants (one MoE stage object each,
// usually on different ranks); participant r holds experts
// [r * E/size, (r+1) * E/size). exchange() is collective: every participant
// calls it with one TokenBlock per destination (index = destination rank; an
// empty block is allowed) and gets back one block per source, in source order.
// Calls match in issue order, like NCCL collectives on one communicator.
//
// LocalAllToAll is the single-participant group used now (and by the
// reference); a threaded or NCCL implementation plugs in behind this interface.
#pragma once

#include "pipert/Tensor.h"

#include <vector>

namespace pipert {

template <typename T>
struct TokenBlock {
  Tensor<T> rows;        // tokens x hidden
  std::vector<int> tags; // one per row (Dispatch: the receiver's local expert); may be empty
};

template <typename T>
class AllToAll {
public:
  virtual ~AllToAll() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // outgoing.size() == size(); returns size() blocks, block s from participant s.
  virtual std::vector<TokenBlock<T>> exchange(std::vector<TokenBlock<T>> outgoing) = 0;
};

template <typename T>
class LocalAllToAll final : public AllToAll<T> {
public:
  int size() const override { return 1; }
  int rank() const override { return 0; }
  std::vector<TokenBlock<T>> exchange(std::vector<TokenBlock<T>> outgoing) override { return outgoing; }
};

} // namespace pipert
