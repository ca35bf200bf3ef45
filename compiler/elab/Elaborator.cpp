#include "elab/Elaborator.h"

#include "elab/Evaluator.h"
#include "elab/GreedyScheduler.h"
#include "elab/Squeeze.h"
#include "elab/Placement.h"
#include "elab/RankInterpreter.h"

namespace pipec {

using namespace ast;

namespace {

std::string sourceText(SMRange range) {
  return std::string(range.Start.getPointer(), range.End.getPointer());
}

class Elaborator {
public:
  Elaborator(const Schedule &schedule, const ElabOptions &options, DiagnosticEngine &diags)
      : schedule_(schedule), options_(options), diags_(diags), env_(schedule.numVars, 0),
        eval_(env_, diags) {}

  std::optional<ScheduleIR> run() {
    ir_.name = schedule_.name;
    ir_.source = &schedule_;
    if (!bindParameters() || !runGlobals() || !evaluateTopology() || !evaluateSizes() ||
        !evaluateCosts())
      return std::nullopt;
    SlotTable slots;
    if (!elaboratePlacement(schedule_, eval_, diags_, ir_, slots))
      return std::nullopt;
    if (!runRankPrograms(slots) || !squeeze())
      return std::nullopt;
    return std::move(ir_);
  }

private:
  bool bindParameters() {
    for (const Param &p : schedule_.params)
      env_[p.var.id] = p.defaultValue;
    bool ok = true;
    for (const auto &[name, value] : options_.defines) {
      const Param *param = nullptr;
      for (const Param &p : schedule_.params)
        if (p.var.name == name)
          param = &p;
      if (!param) {
        std::string known;
        std::vector<llvm::StringRef> names;
        for (const Param &p : schedule_.params) {
          known += (known.empty() ? "" : ", ") + p.var.name;
          names.push_back(p.var.name);
        }
        std::string suggestion = closestMatch(name, names);
        diags_.report(DiagKind::UnknownParameter,
                      "-D " + name + "=" + std::to_string(value) + ": schedule '" +
                          schedule_.name + "' has no parameter '" + name + "'" +
                          (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?"))
            .note(schedule_.nameRange, known.empty() ? "it declares no parameters"
                                                     : "its parameters are " + known);
        ok = false;
        continue;
      }
      env_[param->var.id] = value;
    }
    for (const Param &p : schedule_.params)
      ir_.params.emplace_back(p.var.name, env_[p.var.id]);
    return ok;
  }

  bool runGlobals() {
    bool ok = true;
    for (const GlobalItem &item : schedule_.globals) {
      if (item.let) {
        if (!eval_.eval(*item.let->value, env_[item.let->var.id]))
          return false;
        continue;
      }
      const Require &require = *item.require;
      int64_t holds;
      if (!eval_.eval(*require.cond, holds))
        return false;
      if (holds)
        continue;
      std::string what = require.message ? *require.message : sourceText(require.cond->range);
      auto &d = diags_.report(DiagKind::RequireFailed, require.cond->range,
                              "requirement failed: " + what);
      std::string values = eval_.describeNames(*require.cond);
      if (!values.empty())
        d.note("with " + values);
      ok = false;
    }
    return ok;
  }

  bool evaluateSized(const std::optional<Sized> &decl, const char *what, int64_t lo, int64_t hi,
                     int64_t fallback, int64_t &out) {
    if (!decl) {
      out = fallback;
      return true;
    }
    if (!eval_.eval(*decl->value, out))
      return false;
    if (out >= lo && out <= hi)
      return true;
    auto &d = diags_.report(DiagKind::TopologyOutOfRange, decl->value->range,
                            std::string(what) + " must be between " + std::to_string(lo) +
                                " and " + std::to_string(hi) + ", but is " + std::to_string(out));
    std::string values = eval_.describeNames(*decl->value);
    if (!values.empty())
      d.note("with " + values);
    return false;
  }

  bool evaluateTopology() {
    if (!evaluateSized(schedule_.ranks, "ranks", 1, kMaxRanks, 0, ir_.numRanks) ||
        !evaluateSized(schedule_.stages, "stages", 1, kMaxStages, 0, ir_.numStages) ||
        !evaluateSized(schedule_.microbatches, "microbatches", 1, kMaxMicrobatches, 0,
                       ir_.numMicrobatches) ||
        !evaluateSized(schedule_.copies, "copies", 1, ir_.numRanks, 1, ir_.copies))
      return false;
    // Every (stage, micro-batch) needs a forward and a backward: refuse up front a
    // schedule whose minimum size is beyond the op limit.
    uint64_t minimumOps = 2 * uint64_t(ir_.numStages) * uint64_t(ir_.numMicrobatches);
    if (minimumOps > options_.limits.maxOps) {
      diags_.report(DiagKind::OpLimitExceeded, schedule_.microbatches->range,
                    std::to_string(ir_.numStages) + " stages and " +
                        std::to_string(ir_.numMicrobatches) + " micro-batches need at least " +
                        std::to_string(minimumOps) + " ops, above the limit of " +
                        std::to_string(options_.limits.maxOps))
          .note("raise the limit with --max-ops if this is intended");
      return false;
    }
    return true;
  }

  // Sizes are at least 1, and bounded so that a rank's sum of live sizes stays
  // far from overflow (2^30 micro-batches of at most 2^30 each).
  bool evaluateSizes() {
    if (!schedule_.sizes)
      return true;
    const SizesDecl &decl = *schedule_.sizes;
    constexpr int64_t kMaxSize = int64_t(1) << 30;
    int64_t count = ir_.numMicrobatches;
    if (!decl.value && int64_t(decl.items.size()) != count) {
      diags_.report(DiagKind::SizesCount, decl.range,
                    "'sizes' lists " + std::to_string(decl.items.size()) + " sizes for " +
                        std::to_string(count) + " micro-batches")
          .note("give one size per micro-batch, or write 'sizes i -> E;' for an expression of "
                "the index");
      return false;
    }
    ir_.microbatchSizes.resize(size_t(count));
    for (int64_t i = 0; i < count; ++i) {
      const Expr &e = decl.value ? *decl.value : *decl.items[size_t(i)];
      if (decl.value)
        env_[decl.var.id] = i;
      int64_t size;
      if (!eval_.eval(e, size))
        return false;
      if (size < 1 || size > kMaxSize) {
        auto &d = diags_.report(DiagKind::SizeOutOfRange, e.range,
                                "micro-batch " + std::to_string(i) + " has size " +
                                    std::to_string(size) + "; a size is 1 to 2^30");
        if (std::string names = eval_.describeNames(e); !names.empty())
          d.note("with " + names);
        return false;
      }
      ir_.microbatchSizes[size_t(i)] = size;
    }
    return true;
  }

  bool evaluateCosts() {
    bool ok = true;
    for (const CostEntry &entry : schedule_.costs) {
      int64_t stage = -1;
      if (entry.stage) {
        if (!eval_.eval(*entry.stage, stage))
          return false;
        if (stage < 0 || stage >= ir_.numStages) {
          diags_.report(DiagKind::CostStageOutOfRange, entry.stage->range,
                        "cost '" + entry.name + "' is given for stage " + std::to_string(stage) +
                            ", but stages are 0 to " + std::to_string(ir_.numStages - 1));
          ok = false;
          continue;
        }
      }
      double value = entry.value;
      if (entry.valueExpr) {
        if (!eval_.evalReal(*entry.valueExpr, value))
          return false;
        if (value < 0) {
          auto &d = diags_.report(DiagKind::NegativeCost, entry.valueExpr->range,
                                  "cost '" + entry.name + "' is " + std::to_string(value) +
                                      "; costs are times, sizes or bandwidths and must be at "
                                      "least 0");
          if (std::string names = eval_.describeNames(*entry.valueExpr); !names.empty())
            d.note("with " + names);
          ok = false;
          continue;
        }
        value += 0.0; // -0 is 0
      }
      for (const CostSetting &earlier : ir_.costs)
        if (earlier.name == entry.name && earlier.stage == stage)
          diags_.warn(DiagKind::DuplicateCost, entry.range, entry.name)
              .note(earlier.origin->range, "first given here");
      ir_.costs.push_back({entry.name, stage, value, &entry});
    }
    return ok;
  }

  bool runRankPrograms(SlotTable &slots) {
    const RankProgram *generic = nullptr;
    std::vector<const RankProgram *> explicitFor(ir_.numRanks, nullptr);
    bool ok = true;
    for (const RankProgram &program : schedule_.rankPrograms) {
      if (program.generic) {
        if (generic) {
          diags_.report(DiagKind::DuplicateRankProgram, program.headRange,
                        "a second generic rank program")
              .note(generic->headRange, "the first one is here");
          ok = false;
        }
        generic = &program;
        continue;
      }
      int64_t index;
      if (!eval_.eval(*program.index, index))
        return false;
      if (index < 0 || index >= ir_.numRanks) {
        diags_.report(DiagKind::RankIndexOutOfRange, program.index->range,
                      "rank " + std::to_string(index) + " does not exist; ranks are 0 to " +
                          std::to_string(ir_.numRanks - 1));
        ok = false;
      } else if (explicitFor[index]) {
        diags_.report(DiagKind::DuplicateRankProgram, program.headRange,
                      "rank " + std::to_string(index) + " has two programs")
            .note(explicitFor[index]->headRange, "the first one is here");
        ok = false;
      } else {
        explicitFor[index] = &program;
      }
    }
    if (!generic) {
      std::vector<int64_t> missing;
      for (int64_t r = 0; r < ir_.numRanks; ++r)
        if (!explicitFor[r])
          missing.push_back(r);
      if (!missing.empty()) {
        std::string list;
        for (size_t i = 0; i < missing.size() && i < 8; ++i)
          list += (i ? ", " : "") + std::to_string(missing[i]);
        if (missing.size() > 8)
          list += ", ... (" + std::to_string(missing.size()) + " ranks)";
        diags_.report(DiagKind::MissingRankProgram, schedule_.nameRange,
                      std::string(missing.size() == 1 ? "rank " : "ranks ") + list +
                          (missing.size() == 1 ? " has" : " have") + " no program")
            .note("add 'rank N { ... }' for each, or a generic 'rank r { ... }'");
        ok = false;
      }
    }
    if (generic && generic->greedy)
      for (const RankProgram &program : schedule_.rankPrograms)
        if (&program != generic) {
          diags_.report(DiagKind::GreedyMixedPrograms, program.headRange,
                        "a rank program beside a greedy one")
              .note(generic->greedyRange, "the greedy program schedules every rank; put this "
                                          "rank's order in its entries, or drop 'greedy'");
          ok = false;
          break;
        }
    if (!ok)
      return false;

    ElabBudget budget;
    budget.limits = options_.limits;
    ir_.ranks.resize(ir_.numRanks);
    RankInterpreter interpreter(ir_, eval_, diags_, budget);
    if (generic && generic->greedy) {
      ok = runGreedy(*generic, ir_, eval_, diags_, budget, interpreter, slots);
      for (RankOps &rank : ir_.ranks)
        rank.ops.shrink_to_fit();
      ir_.iterations.shrink_to_fit();
      return ok && !budget.exhausted;
    }
    for (int64_t r = 0; r < ir_.numRanks && !budget.exhausted; ++r) {
      const RankProgram *program = explicitFor[r] ? explicitFor[r] : generic;
      ok &= interpreter.run(r, *program, slots[r]);
      ir_.ranks[r].ops.shrink_to_fit(); // growth slack would stay for the whole run
    }
    ir_.iterations.shrink_to_fit();
    return ok && !budget.exhausted;
  }

  // `squeeze [limit E];` after every rank's program has run (elab/Squeeze.h).
  bool squeeze() {
    if (!schedule_.squeeze)
      return true;
    const SqueezeDecl &decl = *schedule_.squeeze;
    int64_t limit = -1;
    if (decl.limit) {
      if (!eval_.eval(*decl.limit, limit))
        return false;
      if (limit < 1) {
        auto &d = diags_.report(DiagKind::SqueezeLimit, decl.limit->range,
                                "the squeeze limit must be at least 1 live activation, but is " +
                                    std::to_string(limit));
        std::string values = eval_.describeNames(*decl.limit);
        if (!values.empty())
          d.note("with " + values);
        return false;
      }
    }
    ElabBudget budget;
    budget.limits = options_.limits;
    return runSqueeze(ir_, limit, decl, diags_, budget) && !budget.exhausted;
  }

  const Schedule &schedule_;
  const ElabOptions &options_;
  DiagnosticEngine &diags_;
  std::vector<int64_t> env_;
  Evaluator eval_;
  ScheduleIR ir_;
};

} // namespace

std::optional<ScheduleIR> elaborate(const Schedule &schedule, const ElabOptions &options,
                                    DiagnosticEngine &diags) {
  return Elaborator(schedule, options, diags).run();
}

} // namespace pipec
