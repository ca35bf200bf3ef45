#include "interop/TorchImport.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>

namespace pipec {

namespace {

// Where a (stage, micro-batch) runs: the rank of its first op.
struct Home {
  int32_t rank = -1;
  const TorchAction *first = nullptr;
};

template <typename Fn> void forEachAction(const TorchCsv &csv, Fn fn) {
  for (size_t r = 0; r < csv.rows.size(); ++r)
    for (const TorchCell &cell : csv.rows[r]) {
      fn(static_cast<int32_t>(r), cell.first);
      if (cell.second)
        fn(static_cast<int32_t>(r), *cell.second);
    }
}

std::string stageAndMicrobatch(int64_t stage, int64_t mb) {
  return "stage " + std::to_string(stage) + ", micro-batch " + std::to_string(mb);
}

class Inference {
public:
  Inference(const TorchCsv &csv, const ElabLimits &limits, DiagnosticEngine &diags)
      : csv_(csv), limits_(limits), diags_(diags) {}

  std::optional<ImportedSchedule> run() {
    if (!measure() || !findHomes() || !matchWs() || !formFlows())
      return std::nullopt;
    numberChunks();
    writeOps();
    return std::move(out_);
  }

private:
  // Topology from the largest ids.
  bool measure() {
    out_.numRanks = static_cast<int64_t>(csv_.rows.size());
    const TorchAction *largest = nullptr;
    forEachAction(csv_, [&](int32_t, const TorchAction &a) {
      if (a.stage >= out_.numStages || a.microbatch >= out_.numMicrobatches)
        largest = &a; // the action that raised the size last
      out_.numStages = std::max(out_.numStages, a.stage + 1);
      out_.numMicrobatches = std::max(out_.numMicrobatches, a.microbatch + 1);
    });
    if (!largest) {
      diags_.report(DiagKind::EmptyCsvSchedule,
                    "'" + csv_.path + "' holds no action, so there is no schedule to import")
          .note("pipec reads PyTorch's compute-only CSV: one row per rank, cells such as 0F0, "
                "3I1 or (0F7;7B3)OVERLAP_F_B");
      return false;
    }
    // As elaboration does: every (stage, micro-batch) needs a forward and a
    // backward. Ids are below 2^24 and 2^30, so this cannot overflow.
    uint64_t minimumOps = 2 * uint64_t(out_.numStages) * uint64_t(out_.numMicrobatches);
    if (minimumOps > limits_.maxOps) {
      diags_.report(DiagKind::OpLimitExceeded, largest->range,
                    "ids up to stage " + std::to_string(out_.numStages - 1) +
                        " and micro-batch " + std::to_string(out_.numMicrobatches - 1) +
                        " make a schedule of at least " + std::to_string(minimumOps) +
                        " ops, above the limit of " + std::to_string(limits_.maxOps))
          .note("raise the limit with --max-ops if this is intended");
      return false;
    }
    return true;
  }

  size_t key(int64_t stage, int64_t mb) const {
    return static_cast<size_t>(stage * out_.numMicrobatches + mb);
  }

  // The rank of every (stage, micro-batch), and the ranks of every stage.
  bool findHomes() {
    homes_.assign(static_cast<size_t>(out_.numStages * out_.numMicrobatches), {});
    stageRanks_.assign(out_.numStages, {});
    bool ok = true;
    unsigned conflicts = 0;
    forEachAction(csv_, [&](int32_t rank, const TorchAction &a) {
      Home &home = homes_[key(a.stage, a.microbatch)];
      if (home.rank < 0) {
        home = {rank, &a};
        if (a.stage == out_.numStages - 1 && !lastStageFirst_)
          lastStageFirst_ = &a;
        std::vector<int32_t> &ranks = stageRanks_[a.stage];
        if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end())
          ranks.push_back(rank);
        return;
      }
      if (home.rank == rank)
        return;
      ok = false;
      if (++conflicts > kMaxReportedCells) // one per op could be millions
        return;
      diags_
          .report(DiagKind::CsvPlacementConflict, a.range,
                  stageAndMicrobatch(a.stage, a.microbatch) + " runs on rank " +
                      std::to_string(rank) + " here and on rank " + std::to_string(home.rank) +
                      " too; all ops of one stage and micro-batch must run on one rank")
          .note(home.first->range, "on rank " + std::to_string(home.rank) + " here");
    });
    if (conflicts > kMaxReportedCells)
      diags_.report(DiagKind::CsvPlacementConflict,
                    std::to_string(conflicts - kMaxReportedCells) +
                        " more ops run on another rank than the first op of their stage and "
                        "micro-batch");
    // One error for all stages without ops: there can be millions.
    int64_t missing = 0, firstMissing = -1;
    for (int64_t s = 0; s < out_.numStages; ++s)
      if (stageRanks_[s].empty() && missing++ == 0)
        firstMissing = s;
    if (missing != 0) {
      diags_.report(DiagKind::CsvPlacementConflict,
                    "stage " + std::to_string(firstMissing) +
                        (missing > 1 ? " and " + std::to_string(missing - 1) + " more stages have"
                                     : " has") +
                        " no op in '" + csv_.path + "' (its largest stage id is " +
                        std::to_string(out_.numStages - 1) +
                        "), so pipec cannot tell which rank holds it");
      ok = false;
    }
    return ok;
  }

  // The rank of (stage, mb): where its ops run, or the stage's only rank.
  int32_t rankOf(int64_t stage, int64_t mb) const {
    const Home &home = homes_[key(stage, mb)];
    if (home.rank >= 0)
      return home.rank;
    return stageRanks_[stage].size() == 1 ? stageRanks_[stage][0] : -1;
  }

  // A W completes an earlier I of its stage and micro-batch on its rank; the
  // front end rejects one that has none, so import reports it in the CSV.
  bool matchWs() {
    std::map<std::tuple<int32_t, int64_t, int64_t>, int64_t> pending; // (rank, stage, mb)
    const TorchAction *first = nullptr;
    int64_t unmatched = 0;
    forEachAction(csv_, [&](int32_t rank, const TorchAction &a) {
      if (a.kind == ast::OpKind::I)
        ++pending[{rank, a.stage, a.microbatch}];
      if (a.kind != ast::OpKind::W)
        return;
      auto it = pending.find({rank, a.stage, a.microbatch});
      if (it != pending.end() && it->second > 0) {
        --it->second;
      } else if (unmatched++ == 0) {
        first = &a;
      }
    });
    if (!first)
      return true;
    auto &d = diags_.report(DiagKind::UnmatchedW, first->range,
                            "this W of " + stageAndMicrobatch(first->stage, first->microbatch) +
                                " has no I of them before it on its rank to complete");
    d.note("every W completes an earlier I (the input-gradient half of a backward)");
    if (unmatched > 1)
      d.note(std::to_string(unmatched - 1) + " more W" + (unmatched > 2 ? "s have" : " has") +
             " no I before it");
    return false;
  }

  llvm::SMRange actionOfLastStage(int64_t mb) const {
    const Home &home = homes_[key(out_.numStages - 1, mb)];
    return home.first ? home.first->range : lastStageFirst_->range;
  }

  // Maximal runs of micro-batches with one placement.
  bool formFlows() {
    std::vector<int32_t> previous, current(out_.numStages);
    for (int64_t mb = 0; mb < out_.numMicrobatches; ++mb) {
      for (int64_t s = 0; s < out_.numStages; ++s) {
        current[s] = rankOf(s, mb);
        if (current[s] < 0) {
          std::string ranks;
          for (int32_t r : stageRanks_[s])
            ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
          diags_.report(DiagKind::CsvPlacementConflict,
                        "stage " + std::to_string(s) + " runs on ranks " + ranks +
                            ", and micro-batch " + std::to_string(mb) +
                            " has no op of it, so its rank for that micro-batch is unknown");
          return false;
        }
      }
      if (current != previous) {
        out_.flows.push_back({mb, mb + 1, {}, actionOfLastStage(mb)});
        previous = current;
      } else {
        out_.flows.back().end = mb + 1;
      }
    }
    return true;
  }

  // Chunk numbers per rank: by first flow, then in stage order (chunk 0 holds
  // the rank's lowest stage), whatever order the row runs them in.
  void numberChunks() {
    std::vector<std::map<int64_t, std::pair<size_t, size_t>>> order(out_.numRanks);
    for (size_t f = 0; f < out_.flows.size(); ++f)
      for (int64_t s = 0; s < out_.numStages; ++s)
        order[rankOf(s, out_.flows[f].begin)].emplace(s, std::make_pair(f, size_t(s)));
    chunkOf_.assign(out_.numRanks, {});
    for (int64_t r = 0; r < out_.numRanks; ++r) {
      std::vector<std::pair<std::pair<size_t, size_t>, int64_t>> slots;
      for (const auto &[stage, rank] : order[r])
        slots.push_back({rank, stage});
      std::sort(slots.begin(), slots.end());
      for (size_t c = 0; c < slots.size(); ++c)
        chunkOf_[r][slots[c].second] = static_cast<int32_t>(c);
    }
    for (ImportedFlow &flow : out_.flows)
      for (int64_t s = 0; s < out_.numStages; ++s) {
        int32_t rank = rankOf(s, flow.begin);
        flow.stageSlots.push_back({rank, chunkOf_[rank][s]});
      }
    for (const std::vector<int32_t> &ranks : stageRanks_)
      out_.copies = std::max<int64_t>(out_.copies, static_cast<int64_t>(ranks.size()));
  }

  void writeOps() {
    out_.ranks.resize(csv_.rows.size());
    for (size_t r = 0; r < csv_.rows.size(); ++r)
      for (const TorchCell &cell : csv_.rows[r]) {
        auto op = [&](const TorchAction &a, PairRole pair) {
          return ImportedOp{a.kind, pair, chunkOf_[r].at(a.stage), a.microbatch};
        };
        out_.ranks[r].push_back(op(cell.first, cell.second ? PairRole::First : PairRole::None));
        out_.ranks[r].back().backwardWrittenFirst = cell.backwardWrittenFirst;
        if (cell.second)
          out_.ranks[r].push_back(op(*cell.second, PairRole::Second));
      }
  }

  const TorchCsv &csv_;
  const ElabLimits &limits_;
  DiagnosticEngine &diags_;
  const TorchAction *lastStageFirst_ = nullptr;
  ImportedSchedule out_;
  std::vector<Home> homes_;
  std::vector<std::vector<int32_t>> stageRanks_;
  std::vector<std::map<int64_t, int32_t>> chunkOf_; // rank -> stage -> chunk
};

} // namespace

std::optional<ImportedSchedule> inferSchedule(const TorchCsv &csv, const ElabLimits &limits,
                                              DiagnosticEngine &diags) {
  return Inference(csv, limits, diags).run();
}

} // namespace pipec
