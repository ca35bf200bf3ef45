#include "synth/FilePlacement.h"

#include "diag/DiagnosticRenderer.h"
#include "frontend/Compilation.h"

#include "llvm/Support/raw_ostream.h"

namespace pipec::synth {

namespace {

// `value` per stage as an expression in s: a constant, s itself, or a chain of
// conditionals (the language's ?: nests to the right).
std::string stageExpression(const std::vector<int> &value) {
  bool constant = true, identity = true;
  for (size_t s = 0; s < value.size(); ++s) {
    constant = constant && value[s] == value[0];
    identity = identity && value[s] == int(s);
  }
  if (constant)
    return std::to_string(value[0]);
  if (identity)
    return "s";
  // The closed forms the library's placements use: C - s, s / k, s % k.
  int n = int(value.size());
  auto matches = [&](auto f) {
    for (int s = 0; s < n; ++s)
      if (value[s] != f(s))
        return false;
    return true;
  };
  if (matches([&](int s) { return value[0] - s; }))
    return std::to_string(value[0]) + " - s";
  for (int k = 2; k <= n; ++k) {
    if (matches([&](int s) { return s / k; }))
      return "s / " + std::to_string(k);
    if (matches([&](int s) { return s % k; }))
      return "s % " + std::to_string(k);
  }
  std::string out;
  for (size_t s = 0; s + 1 < value.size(); ++s)
    out += "s == " + std::to_string(s) + " ? " + std::to_string(value[s]) + " : ";
  return out + std::to_string(value.back());
}

} // namespace

FileLayout layoutFromFile(const std::string &path,
                          const std::vector<std::pair<std::string, int64_t>> &defines,
                          int maxRanks, int maxMicrobatches, std::string &error) {
  FileLayout result;
  Compilation compilation(path);
  ElabOptions options;
  options.defines = defines;
  if (!compilation.runFrontEnd(options) || compilation.diags().hasErrors()) {
    llvm::raw_string_ostream out(error);
    renderText(compilation.diags(), out, false);
    out << "--placement " << path << ": the file does not elaborate at these values\n";
    return result;
  }
  const ScheduleIR &ir = *compilation.ir();
  if (ir.numRanks > maxRanks || ir.numMicrobatches > maxMicrobatches ||
      ir.numStages > int64_t(maxRanks) * 8) {
    error = "--placement " + path + ": " + std::to_string(ir.numRanks) + " ranks, " +
            std::to_string(ir.numStages) + " stages and " + std::to_string(ir.numMicrobatches) +
            " micro-batches are beyond a search (at most " + std::to_string(maxRanks) +
            " ranks, 8 stages per rank, " + std::to_string(maxMicrobatches) + " micro-batches)";
    return result;
  }
  StagePlacement &l = result.layout;
  l.family = PlacementFamily::File;
  l.ranks = int(ir.numRanks);
  l.stages = int(ir.numStages);
  l.copies = int(ir.copies);
  for (const Flow &flow : ir.flows) {
    FlowPlacement f;
    f.name = flow.name.empty() ? "f" + std::to_string(l.flows.size()) : flow.name;
    f.begin = int(flow.begin);
    f.end = int(flow.end);
    for (const Slot &slot : flow.stageSlots) {
      f.stageRank.push_back(slot.rank);
      f.stageChunk.push_back(slot.chunk);
      l.chunks = std::max(l.chunks, slot.chunk + 1);
    }
    f.rankExpr = stageExpression(f.stageRank);
    f.chunkExpr = stageExpression(f.stageChunk);
    l.flows.push_back(f);
  }
  const FlowPlacement &first = l.flows.front();
  l.stageRank = first.stageRank;
  l.stageChunk = first.stageChunk;
  l.rankExpr = first.rankExpr;
  l.chunkExpr = first.chunkExpr;
  l.rankStages.assign(l.ranks, {});
  for (int s = 0; s < l.stages; ++s)
    l.rankStages[l.stageRank[s]].push_back(s);
  if (l.flows.size() == 1)
    l.flows.clear(); // one placement for every micro-batch
  result.microbatches = int(ir.numMicrobatches);
  result.name = ir.name;
  return result;
}

} // namespace pipec::synth
