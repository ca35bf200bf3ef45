// TokenExchange<T>: the all-to-all plan of one micro-batch in one MoE stage,
// and the two moves every Dispatch/Combine (forward and backward) is made of.
// A "slot" is one (token t, choice j) pair, row t*k + j of a (tokens*k) x h
// matrix; it travels to the participant owning its expert.
//   slotsToExperts: slot rows -> per local expert input rows (forward Dispatch,
//                   backward Combine)
//   expertsToSlots: per local expert rows -> slot rows back at their source
//                   (forward Combine, backward Dispatch)
// Each local expert's rows are ordered by (source participant, row within the
// source's block), so the grouping is deterministic. Every exchange after the
// first re-checks the layout it receives, so participants calling the
// all-to-alls of different micro-batches in mismatched order are caught.
#pragma once

#include "pipert/AllToAll.h"

#include <utility>
#include <vector>

namespace pipert {

template <typename T>
class TokenExchange {
public:
  // experts: tokens x k chosen (global) expert indices, row-major.
  void plan(const std::vector<int> &experts, int expertsPerRank, int epSize);

  void slotsToExperts(AllToAll<T> &comm, const Tensor<T> &slots, std::vector<Tensor<T>> &perExpert);
  void expertsToSlots(AllToAll<T> &comm, const std::vector<Tensor<T>> &perExpert, Tensor<T> &slots) const;

private:
  int expertsPerRank_ = 0;
  std::vector<int> sendDest_, sendRow_, sendTag_; // per slot
  std::vector<size_t> sentCount_;                 // per destination
  std::vector<size_t> receivedCount_;             // per source
  std::vector<std::vector<std::pair<int, int>>> origin_; // per local expert: (source, row)
  bool received_ = false;
};

extern template class TokenExchange<float>;
extern template class TokenExchange<double>;

} // namespace pipert
