// Parsing Megatron-style pipeline layout strings and splitting the layers over
// the stages, evenly or with set first/last stage counts (StageLayout.h).
#include "plan/StageLayout.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <optional>

namespace pipec::plan {

namespace {

// Splits `rest` layers evenly over the `count` stages at out[0..count): the
// spare ones one each to the stages from `spareFrom` on, the last stage
// taking any left past the end.
void shareEvenly(int64_t rest, int64_t count, int64_t spareFrom, int64_t *out) {
  if (count <= 0)
    return;
  const int64_t base = rest / count, spare = rest % count;
  std::fill(out, out + count, base);
  for (int64_t k = 0; k < spare; ++k)
    out[std::min(count - 1, spareFrom + k)] += 1;
}

} // namespace

std::optional<std::vector<int64_t>> parsePipelineLayout(const std::string &layout, std::string &error,
                                                        int64_t *mtp) {
  int64_t mtpModules = 0;
  std::vector<std::string> parts{""};
  for (char c : layout) {
    if (c == '|')
      parts.emplace_back();
    else if (c != ' ')
      parts.back() += c;
  }
  std::vector<int64_t> counts;
  auto bad = [&](size_t stage, const std::string &why) {
    error = "pipeline layout '" + layout + "', stage " + std::to_string(stage) + ": " + why;
    return std::nullopt;
  };
  for (size_t s = 0; s < parts.size(); ++s) {
    const std::string &p = parts[s];
    int64_t layers = 0;
    for (size_t i = 0; i < p.size();) {
      char symbol = p[i++];
      int64_t repeat = 1;
      if (i < p.size() && p[i] == '*') {
        size_t start = ++i;
        repeat = 0;
        while (i < p.size() && std::isdigit(static_cast<unsigned char>(p[i])) && repeat < (int64_t(1) << 30))
          repeat = repeat * 10 + (p[i++] - '0');
        if (i == start)
          return bad(s, "'*' needs a count after it");
        if (i < p.size() && std::isdigit(static_cast<unsigned char>(p[i])))
          return bad(s, "a repeat count is too large");
      }
      if (symbol == 't')
        layers += repeat;
      else if (symbol == 'E') {
        if (s != 0 || repeat != 1)
          return bad(s, "'E' (the embedding) belongs once on the first stage");
      } else if (symbol == 'L') {
        if (s + 1 != parts.size() || repeat != 1)
          return bad(s, "'L' (the head and loss) belongs once on the last stage");
      } else if (symbol == 'm') {
        if (s + 1 != parts.size())
          return bad(s, "'m' (an MTP module) belongs on the last stage, with the loss");
        mtpModules += repeat;
      } else
        return bad(s, std::string("'") + symbol + "' is not E, t, m, L, '*' or '|'");
    }
    counts.push_back(layers);
  }
  if (parts.front().find('E') == std::string::npos)
    return bad(0, "the first stage must hold the embedding 'E'");
  if (parts.back().find('L') == std::string::npos)
    return bad(parts.size() - 1, "the last stage must hold the head 'L'");
  if (mtp)
    *mtp = mtpModules;
  return counts;
}

std::optional<std::vector<std::pair<size_t, size_t>>>
stageLayerRanges(const ModelLayers &model, int64_t stages, const Training &training, std::string &error) {
  int64_t layers = model.transformerLayers();
  if (stages < 1) {
    error = "stage split: needs at least one stage";
    return std::nullopt;
  }
  std::vector<int64_t> counts;
  if (!training.pipelineLayout.empty()) {
    int64_t mtp = 0;
    auto parsed = parsePipelineLayout(training.pipelineLayout, error, &mtp);
    if (!parsed)
      return std::nullopt;
    if (mtp != model.mtpModules) {
      error = "pipeline layout '" + training.pipelineLayout + "' places " + std::to_string(mtp) +
              " MTP module" + (mtp == 1 ? "" : "s") + " ('m'); training runs " + std::to_string(model.mtpModules) +
              " (mtp_layers)";
      return std::nullopt;
    }
    if (int64_t(parsed->size()) != stages) {
      error = "pipeline layout '" + training.pipelineLayout + "' names " + std::to_string(parsed->size()) +
              " stages; the schedule has " + std::to_string(stages);
      return std::nullopt;
    }
    counts = *parsed;
  } else {
    int64_t first = training.firstStageLayers, last = training.lastStageLayers;
    int64_t fixed = 0, freeStages = stages;
    if (first >= 0) {
      fixed += first;
      --freeStages;
    }
    if (last >= 0 && stages > 1) {
      fixed += last;
      --freeStages;
    } else if (last >= 0 && first < 0) {
      fixed += last; // one stage: "last" is the only stage
      --freeStages;
    }
    if (stages == 1 && first >= 0 && last >= 0 && first != last) {
      error = "stage split: one stage cannot hold " + std::to_string(first) + " and " +
              std::to_string(last) + " layers";
      return std::nullopt;
    }
    int64_t rest = layers - fixed;
    if (rest < 0 || (freeStages == 0 && rest != 0) || (freeStages > 0 && rest < freeStages)) {
      error = "stage split: " + std::to_string(layers) + " transformer layers cannot give " +
              (first >= 0 ? std::to_string(first) : std::string("an even share")) + " to the first stage, " +
              (last >= 0 ? std::to_string(last) : std::string("an even share")) + " to the last and at least one to each of the other " +
              std::to_string(std::max<int64_t>(freeStages, 0));
      return std::nullopt;
    }
    // Spare layers go to the free stages after the first (which holds the embedding).
    std::vector<int64_t> freeCounts(size_t(std::max<int64_t>(freeStages, 0)), 0);
    shareEvenly(rest, freeStages, first >= 0 ? 0 : 1, freeCounts.data());
    size_t next = 0;
    for (int64_t s = 0; s < stages; ++s) {
      if (s == 0 && first >= 0)
        counts.push_back(first);
      else if (s == stages - 1 && last >= 0 && stages > 1)
        counts.push_back(last);
      else if (stages == 1 && last >= 0)
        counts.push_back(last);
      else
        counts.push_back(freeCounts[next++]);
    }
  }
  int64_t total = 0;
  for (int64_t c : counts)
    total += c;
  if (total != layers) {
    error = "stage split: the stages hold " + std::to_string(total) + " transformer layers; the model has " +
            std::to_string(layers);
    return std::nullopt;
  }
  std::vector<std::pair<size_t, size_t>> ranges;
  size_t next = 0;
  for (int64_t s = 0; s < stages; ++s) {
    size_t count = size_t(counts[size_t(s)]) + (s == 0) + (s == stages - 1 ? 1 + model.mtpEntries() : 0);
    if (count == 0) {
      error = "stage split: stage " + std::to_string(s) + " would hold no layer";
      return std::nullopt;
    }
    ranges.emplace_back(next, next + count);
    next += count;
  }
  return ranges;
}

std::pair<int64_t, int64_t> balancedStageEnds(const ModelLayers &model, const std::vector<double> &layerWork,
                                              const std::vector<std::vector<int64_t>> &stageRanks) {
  const int64_t stages = int64_t(stageRanks.size()), layers = model.transformerLayers();
  if (layerWork.size() != model.layers.size())
    return {-1, -1};
  int64_t ranks = 0;
  for (const std::vector<int64_t> &holders : stageRanks)
    for (int64_t r : holders)
      ranks = std::max(ranks, r + 1);
  if (stages < 2 || ranks < 2 || layers < stages)
    return {-1, -1};
  // The work of layers [0, i), so a stage's is a difference.
  std::vector<double> upTo(model.layers.size() + 1, 0.0);
  for (size_t i = 0; i < model.layers.size(); ++i)
    upTo[i + 1] = upTo[i] + layerWork[i];
  // A split's busiest rank, heaviest stage and the ranks' sum of squared
  // work (the spread of the rest).
  using Weight = std::array<double, 3>;
  // The work of a split given as each stage's number of entries of
  // model.layers (in order); `rankWork` is reused across the tries.
  std::vector<double> rankWork(size_t(ranks), 0.0);
  auto weigh = [&](const std::vector<int64_t> &entries) -> Weight {
    std::fill(rankWork.begin(), rankWork.end(), 0.0);
    double heaviestStage = 0;
    size_t begin = 0;
    for (size_t s = 0; s < entries.size(); ++s) {
      size_t end = begin + size_t(entries[s]);
      double work = upTo[end] - upTo[begin];
      begin = end;
      heaviestStage = std::max(heaviestStage, work);
      for (int64_t r : stageRanks[s])
        rankWork[size_t(r)] += work;
    }
    double squares = 0;
    for (double w : rankWork)
      squares += w * w;
    return Weight{*std::max_element(rankWork.begin(), rankWork.end()), heaviestStage, squares};
  };
  // Better by a clear margin on the busiest rank; as busy, on the heaviest
  // stage; as heavy, on the spread (so that among splits whose busiest rank
  // is the head's alone, the others are as even as they can be).
  auto better = [](const Weight &a, const Weight &b) {
    const double eps = 1e-9;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] < b[i] * (1 - eps))
        return true;
      if (a[i] > b[i] * (1 + eps))
        return false;
    }
    return false;
  };
  // The even split, as stageLayerRanges makes it.
  std::vector<int64_t> entries;
  {
    std::string unused;
    auto even = stageLayerRanges(model, stages, Training{}, unused);
    if (!even)
      return {-1, -1};
    for (const auto &[first, last] : *even)
      entries.push_back(int64_t(last - first));
  }
  Weight best = weigh(entries);
  std::pair<int64_t, int64_t> chosen{-1, -1};
  // The end stages move by a few layers around the even share; the head's
  // may shed as many as its extra work (the head and MTP passes) is worth in
  // mean layers. The tries stay a few dozen whatever the depth.
  const int64_t share = (layers + stages - 1) / stages;
  const size_t headFrom = model.layers.size() - 1 - model.mtpEntries();
  const double meanLayer = (upTo[headFrom] - upTo[1]) / double(layers);
  const double headWork = upTo.back() - upTo[headFrom];
  const int64_t headLayers =
      meanLayer > 0 ? int64_t(std::min(double(share), std::ceil(headWork / meanLayer))) : share;
  const int64_t reach = 2;
  for (int64_t first = std::max<int64_t>(0, share - reach); first <= share + reach; ++first)
    for (int64_t last = std::max<int64_t>(0, share - reach - headLayers); last <= share + reach; ++last) {
      // Splits that leave a middle stage empty are not made (stageLayerRanges
      // refuses them). The others as stageLayerRanges makes them with both
      // ends set: the middle stages share the rest evenly, the spare layers
      // to the first of them.
      const int64_t rest = layers - first - last, middle = stages - 2;
      if (rest < middle || (middle == 0 && rest != 0))
        continue;
      entries.front() = first + 1; // and the embedding
      shareEvenly(rest, middle, 0, entries.data() + 1);
      entries.back() = last + 1 + int64_t(model.mtpEntries()); // and the head (and MTP)
      Weight weight = weigh(entries);
      if (better(weight, best)) {
        best = weight;
        chosen = {first, last};
      }
    }
  return chosen;
}

} // namespace pipec::plan
