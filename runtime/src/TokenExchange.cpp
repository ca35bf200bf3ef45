// TokenExchange<T> (see TokenExchange.h).
#include "pipert/TokenExchange.h"

#include "pipert/Check.h"

#include <algorithm>

namespace pipert {

namespace {
template <typename T> void copyRow(const Tensor<T> &from, size_t fromRow, Tensor<T> &to, size_t toRow) {
  std::copy(from.row(fromRow), from.row(fromRow) + from.cols(), to.row(toRow));
}
} // namespace

template <typename T> void TokenExchange<T>::plan(const std::vector<int> &experts, int expertsPerRank, int epSize) {
  expertsPerRank_ = expertsPerRank;
  sentCount_.assign(static_cast<size_t>(epSize), 0);
  sendDest_.resize(experts.size());
  sendRow_.resize(experts.size());
  sendTag_.resize(experts.size());
  for (size_t i = 0; i < experts.size(); ++i) {
    const int dest = experts[i] / expertsPerRank;
    sendDest_[i] = dest;
    sendTag_[i] = experts[i] % expertsPerRank;
    sendRow_[i] = static_cast<int>(sentCount_[static_cast<size_t>(dest)]++);
  }
  received_ = false;
}

template <typename T>
void TokenExchange<T>::slotsToExperts(AllToAll<T> &comm, const Tensor<T> &slots, std::vector<Tensor<T>> &perExpert) {
  PIPERT_CHECK(slots.rows() == sendDest_.size(), "slots " + slots.shapeString());
  const size_t epSize = sentCount_.size(), width = slots.cols();
  std::vector<TokenBlock<T>> outgoing(epSize);
  for (size_t d = 0; d < epSize; ++d) {
    outgoing[d].rows.reset(sentCount_[d], width);
    outgoing[d].tags.resize(sentCount_[d]);
  }
  for (size_t i = 0; i < sendDest_.size(); ++i) {
    TokenBlock<T> &block = outgoing[static_cast<size_t>(sendDest_[i])];
    copyRow(slots, i, block.rows, static_cast<size_t>(sendRow_[i]));
    block.tags[static_cast<size_t>(sendRow_[i])] = sendTag_[i];
  }
  std::vector<TokenBlock<T>> incoming = comm.exchange(std::move(outgoing));
  PIPERT_CHECK(incoming.size() == epSize, "all-to-all returned " + std::to_string(incoming.size()) + " blocks");

  if (!received_) { // first exchange of this micro-batch: learn the layout
    receivedCount_.assign(epSize, 0);
    origin_.assign(static_cast<size_t>(expertsPerRank_), {});
    for (size_t s = 0; s < epSize; ++s) {
      receivedCount_[s] = incoming[s].rows.rows();
      PIPERT_CHECK(incoming[s].tags.size() == receivedCount_[s], "block without one tag per row");
      for (size_t r = 0; r < receivedCount_[s]; ++r) {
        const int tag = incoming[s].tags[r];
        PIPERT_CHECK(tag >= 0 && tag < expertsPerRank_, "local expert tag " + std::to_string(tag));
        origin_[static_cast<size_t>(tag)].push_back({static_cast<int>(s), static_cast<int>(r)});
      }
    }
    received_ = true;
  } else {
    for (size_t s = 0; s < epSize; ++s)
      PIPERT_CHECK(incoming[s].rows.rows() == receivedCount_[s] && incoming[s].tags.size() == receivedCount_[s],
                   "all-to-all layout changed between exchanges of one micro-batch (mismatched call order?)");
  }

  perExpert.assign(origin_.size(), Tensor<T>());
  for (size_t e = 0; e < origin_.size(); ++e) {
    perExpert[e].reset(origin_[e].size(), width);
    for (size_t r = 0; r < origin_[e].size(); ++r) {
      const auto [source, row] = origin_[e][r];
      PIPERT_CHECK(incoming[static_cast<size_t>(source)].tags[static_cast<size_t>(row)] == static_cast<int>(e),
                   "all-to-all tags changed between exchanges of one micro-batch");
      copyRow(incoming[static_cast<size_t>(source)].rows, static_cast<size_t>(row), perExpert[e], r);
    }
  }
}

template <typename T>
void TokenExchange<T>::expertsToSlots(AllToAll<T> &comm, const std::vector<Tensor<T>> &perExpert,
                                      Tensor<T> &slots) const {
  PIPERT_CHECK(received_ && perExpert.size() == origin_.size(), "expertsToSlots before slotsToExperts");
  const size_t epSize = sentCount_.size();
  const size_t width = perExpert.empty() ? 0 : perExpert.front().cols();
  std::vector<TokenBlock<T>> back(epSize);
  for (size_t s = 0; s < epSize; ++s)
    back[s].rows.reset(receivedCount_[s], width);
  for (size_t e = 0; e < origin_.size(); ++e) {
    PIPERT_CHECK(perExpert[e].rows() == origin_[e].size() && perExpert[e].cols() == width,
                 "expert " + std::to_string(e) + " rows " + perExpert[e].shapeString());
    for (size_t r = 0; r < origin_[e].size(); ++r) {
      const auto [source, row] = origin_[e][r];
      copyRow(perExpert[e], r, back[static_cast<size_t>(source)].rows, static_cast<size_t>(row));
    }
  }
  std::vector<TokenBlock<T>> returned = comm.exchange(std::move(back));
  PIPERT_CHECK(returned.size() == epSize, "all-to-all returned " + std::to_string(returned.size()) + " blocks");
  for (size_t d = 0; d < epSize; ++d)
    PIPERT_CHECK(returned[d].rows.rows() == sentCount_[d] && returned[d].rows.cols() == width,
                 "participant " + std::to_string(d) + " returned " + returned[d].rows.shapeString() +
                     " for " + std::to_string(sentCount_[d]) + " rows sent");
  slots.reset(sendDest_.size(), width);
  for (size_t i = 0; i < sendDest_.size(); ++i)
    copyRow(returned[static_cast<size_t>(sendDest_[i])].rows, static_cast<size_t>(sendRow_[i]), slots, i);
}

template class TokenExchange<float>;
template class TokenExchange<double>;

} // namespace pipert
