#include "plan/TraceProfile.h"

#include "plan/JsonFields.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>

namespace pipec::plan {

namespace {

struct Slice {
  int kind; // 0..3: F, B, I, W
  int64_t chunk;
};

// "F0.3" -> kind F, chunk 0 (the micro-batch does not matter here); nullopt
// for an overlap pair "FB(...)" or any other name.
std::optional<Slice> parseLabel(llvm::StringRef name) {
  static const char kKinds[] = "FBIW";
  if (name.size() < 4)
    return std::nullopt;
  const char *kind = std::strchr(kKinds, name[0]);
  if (!kind || *kind == '\0')
    return std::nullopt;
  auto [chunk, micro] = name.drop_front().split('.');
  unsigned long long c, m;
  if (chunk.getAsInteger(10, c) || micro.getAsInteger(10, m) || c > (1ull << 31))
    return std::nullopt;
  return Slice{int(kind - kKinds), int64_t(c)};
}

} // namespace

std::optional<std::vector<TracedOp>> traceOps(llvm::StringRef json, llvm::StringRef name,
                                              const std::vector<std::vector<int64_t>> &stageOf,
                                              std::string &error) {
  std::optional<llvm::json::Object> object = parseJsonObject(json, name, error);
  if (!object)
    return std::nullopt;
  const llvm::json::Array *events = object->getArray("traceEvents");
  if (!events) {
    error = name.str() + ": field 'traceEvents' is missing or not an array";
    return std::nullopt;
  }
  // An op's slice runs from when the rank starts it, so it includes any wait
  // for its input; a message's arrow ends where the message arrived. The op
  // computed from the later of its start and its last input's arrival.
  struct Timed {
    double start, end, arrival;
    int kind;    // -1: an overlap pair
    size_t stage;
  };
  std::vector<std::vector<Timed>> slices(stageOf.size());
  std::vector<std::pair<int64_t, double>> arrivals; // (rank, ts)
  size_t index = 0;
  for (const llvm::json::Value &value : *events) {
    std::string where = name.str() + ": traceEvents[" + std::to_string(index++) + "]";
    const llvm::json::Object *event = value.getAsObject();
    if (!event) {
      error = where + " is not an object";
      return std::nullopt;
    }
    auto phase = event->getString("ph");
    if (phase == llvm::StringRef("f")) {
      auto rank = event->getInteger("pid");
      auto ts = event->getNumber("ts");
      if (!rank || !ts || !std::isfinite(*ts)) {
        error = where + " (a message's arrival) needs an integer 'pid' and a finite number 'ts'";
        return std::nullopt;
      }
      arrivals.push_back({*rank, *ts});
      continue;
    }
    if (phase != llvm::StringRef("X"))
      continue; // metadata and message departures
    auto label = event->getString("name");
    auto rank = event->getInteger("pid");
    auto start = event->getNumber("ts");
    auto duration = event->getNumber("dur");
    if (!label || !rank || !start || !duration) {
      error = where + " needs a string 'name', an integer 'pid' and numbers 'ts' and 'dur'";
      return std::nullopt;
    }
    if (!std::isfinite(*duration) || *duration < 0 || !std::isfinite(*start)) {
      error = where + " has a negative or non-finite 'ts' or 'dur'";
      return std::nullopt;
    }
    if (*rank < 0 || size_t(*rank) >= stageOf.size()) {
      error = where + " ('" + label->str() + "') is on rank " + std::to_string(*rank) +
              ", which the placement does not have";
      return std::nullopt;
    }
    const std::vector<int64_t> &chunks = stageOf[size_t(*rank)];
    std::optional<Slice> slice = parseLabel(*label);
    if (slice && (slice->chunk >= int64_t(chunks.size()) || chunks[size_t(slice->chunk)] < 0)) {
      error = where + " ('" + label->str() + "' on rank " + std::to_string(*rank) +
              ") is on a rank or chunk the placement does not have";
      return std::nullopt;
    }
    // Overlap pairs stay in the list (an arrow may end in one) but are not
    // measured: their halves are not timed apart.
    slices[size_t(*rank)].push_back({*start, *start + *duration, *start, slice ? slice->kind : -1,
                                     slice ? size_t(chunks[size_t(slice->chunk)]) : 0});
  }
  for (std::vector<Timed> &rank : slices)
    std::sort(rank.begin(), rank.end(), [](const Timed &a, const Timed &b) { return a.start < b.start; });
  for (auto [rank, ts] : arrivals) {
    if (rank < 0 || size_t(rank) >= slices.size())
      continue;
    std::vector<Timed> &list = slices[size_t(rank)];
    // The latest slice starting at or before the arrival holds it.
    auto after = std::upper_bound(list.begin(), list.end(), ts,
                                  [](double t, const Timed &slice) { return t < slice.start; });
    if (after != list.begin() && ts <= std::prev(after)->end)
      std::prev(after)->arrival = std::max(std::prev(after)->arrival, ts);
  }

  std::vector<TracedOp> ops;
  for (const std::vector<Timed> &rank : slices)
    for (const Timed &slice : rank)
      if (slice.kind >= 0)
        ops.push_back({slice.stage, slice.kind, (slice.end - slice.arrival) * 1e-6}); // microseconds
  return ops;
}

std::optional<std::vector<StageProfile>> profileTrace(llvm::StringRef json, llvm::StringRef name,
                                                      const std::vector<std::vector<int64_t>> &stageOf,
                                                      std::string &error) {
  std::optional<std::vector<TracedOp>> ops = traceOps(json, name, stageOf, error);
  if (!ops)
    return std::nullopt;
  int64_t stages = 0;
  for (const auto &chunks : stageOf)
    for (int64_t s : chunks)
      stages = std::max(stages, s + 1);
  std::vector<StageProfile> profile(static_cast<size_t>(stages));
  std::vector<std::array<double, 4>> sums(size_t(stages), {0, 0, 0, 0});
  for (const TracedOp &op : *ops) {
    StageProfile &p = profile[op.stage];
    OpProfile *kinds[] = {&p.F, &p.B, &p.I, &p.W};
    ++kinds[op.kind]->samples;
    sums[op.stage][size_t(op.kind)] += op.seconds;
  }
  for (size_t s = 0; s < profile.size(); ++s) {
    OpProfile *measured[] = {&profile[s].F, &profile[s].B, &profile[s].I, &profile[s].W};
    for (int k = 0; k < 4; ++k)
      if (measured[k]->samples > 0)
        measured[k]->seconds = sums[s][size_t(k)] / double(measured[k]->samples);
  }
  return profile;
}

std::optional<std::vector<StageProfile>> readTraceProfile(llvm::StringRef path,
                                                          const std::vector<std::vector<int64_t>> &stageOf,
                                                          std::string &error) {
  std::optional<std::string> text = readTextFile(path, error);
  if (!text)
    return std::nullopt;
  return profileTrace(*text, path, stageOf, error);
}

std::optional<std::array<std::vector<double>, 4>>
readTraceRatios(llvm::StringRef path, const std::vector<std::vector<int64_t>> &stageOf,
                std::string &error) {
  std::optional<std::string> text = readTextFile(path, error);
  if (!text)
    return std::nullopt;
  std::optional<std::vector<TracedOp>> ops = traceOps(*text, path, stageOf, error);
  if (!ops)
    return std::nullopt;
  // Each duration over the mean of its own stage and kind: the shape of the
  // variability, without the stages' different costs.
  std::map<std::pair<size_t, int>, std::pair<double, int64_t>> means;
  for (const TracedOp &op : *ops) {
    auto &[sum, count] = means[{op.stage, op.kind}];
    sum += op.seconds;
    ++count;
  }
  std::array<std::vector<double>, 4> ratios;
  for (const TracedOp &op : *ops) {
    auto [sum, count] = means[{op.stage, op.kind}];
    if (sum > 0)
      ratios[size_t(op.kind)].push_back(op.seconds / (sum / double(count)));
  }
  if (ratios[0].empty() && ratios[1].empty() && ratios[2].empty() && ratios[3].empty()) {
    error = path.str() + ": the trace has no timed F, B, I or W op to draw durations from";
    return std::nullopt;
  }
  return ratios;
}

std::string profileCostsJson(const std::vector<StageProfile> &profile) {
  llvm::json::Object object;
  for (size_t s = 0; s < profile.size(); ++s) {
    const OpProfile *ops[] = {&profile[s].F, &profile[s].B, &profile[s].I, &profile[s].W};
    static const char *kNames[] = {"F", "B", "I", "W"};
    for (int k = 0; k < 4; ++k)
      if (ops[k]->samples > 0)
        object[std::string(kNames[k]) + "[" + std::to_string(s) + "]"] = ops[k]->seconds;
  }
  std::string text;
  llvm::raw_string_ostream out(text);
  out << llvm::formatv("{0:2}", llvm::json::Value(std::move(object))) << "\n";
  return out.str();
}

} // namespace pipec::plan
