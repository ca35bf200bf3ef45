#include "plan/ScheduleCache.h"

#include <algorithm>
#include <chrono>

namespace pipec::plan {

namespace {

std::string firstError(Compilation &compilation) {
  for (const Diagnostic &d : compilation.diags().diagnostics())
    if (d.severity == Severity::Error)
      return d.message;
  return "the schedule was refused";
}

std::shared_ptr<const CompiledSchedule> compile(const std::string &file, int64_t P, int64_t M,
                                                int64_t v, const ElabLimits &limits,
                                                std::string &error) {
  ElabOptions elab;
  elab.limits = limits;
  elab.defines.emplace_back("P", P);
  elab.defines.emplace_back("M", M);
  if (v > 0)
    elab.defines.emplace_back("v", v);
  auto compilation = std::make_unique<Compilation>(file);
  compilation->diags().setErrorLimit(1);
  // Phase by phase, so a deadline (limits.deadline) stops between them too.
  auto pastDeadline = [&] {
    return limits.deadline != std::chrono::steady_clock::time_point::max() &&
           std::chrono::steady_clock::now() > limits.deadline;
  };
  bool ok = compilation->runFrontEnd(elab);
  if (ok && pastDeadline()) {
    error = kPastDeadline;
    return nullptr;
  }
  ok = ok && compilation->check(CheckOptions{});
  if (pastDeadline()) {
    error = kPastDeadline;
    return nullptr;
  }
  if (!ok) {
    error = firstError(*compilation);
    return nullptr;
  }
  const ScheduleIR &ir = *compilation->ir();
  if (ir.numRanks < 1 || ir.numStages % ir.numRanks) {
    error = "stages are not a multiple of ranks";
    return nullptr;
  }
  return prepareCompiled(std::move(compilation));
}

} // namespace

std::shared_ptr<CompiledSchedule> prepareCompiled(std::unique_ptr<Compilation> compilation,
                                                  bool withActivationPeaks) {
  auto c = std::make_shared<CompiledSchedule>();
  c->compilation = std::move(compilation);
  c->compilation->releaseCheckContext();
  const ScheduleIR &ir = c->ir();
  c->plan = std::make_shared<const SimulationPlan>(buildSimulationPlan(ir, *c->report().comm));
  if (withActivationPeaks)
    c->activationPeaks = std::make_shared<const std::vector<RankActivationPeaks>>(activationPeaks(ir));
  c->loneOps.assign(ir.ranks.size(), {});
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    c->ops += ir.ranks[r].ops.size();
    std::vector<CompiledSchedule::StageOps> &stages = c->loneOps[r];
    for (const Op &op : ir.ranks[r].ops) {
      if (op.pair != PairRole::None || op.stage < 0 || op.stage >= ir.numStages ||
          op.kind == OpKind::R || isMemoryOp(op.kind)) // F, B, I, W only: R and the copy-stream ops are not counted
        continue;
      auto at = std::lower_bound(stages.begin(), stages.end(), op.stage,
                                 [](const CompiledSchedule::StageOps &e, int32_t s) { return e.stage < s; });
      if (at == stages.end() || at->stage != op.stage)
        at = stages.insert(at, {op.stage, {0, 0, 0, 0}});
      ++at->count[size_t(op.kind)];
    }
  }
  return c;
}

std::shared_ptr<const CompiledSchedule> ScheduleCache::get(const std::string &file, int64_t P,
                                                           int64_t M, int64_t v,
                                                           const ElabLimits &limits,
                                                           std::string &error,
                                                           uint64_t expectedOps) {
  Key key{file, P, M, v};
  uint64_t reserve = std::min<uint64_t>(std::max<uint64_t>(expectedOps, 1), limits.maxOps);
  {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      auto it = entries_.find(key);
      if (it != entries_.end()) {
        error = it->second.error;
        return it->second.compiled;
      }
      uint64_t others = inFlightOps_ + reserve;
      evict(workingBudget_ > others ? workingBudget_ - others : 0);
      if (cachedOps_ + others <= workingBudget_)
        break;
      // Over the working budget with only what others hold or compile: wait for
      // them (a caller holds no entry while it asks for another). Entries are
      // released without a signal, so the wait also polls.
      if (inFlightOps_ == 0 && opsInUse() == 0)
        break;
      released_.wait_for(lock, std::chrono::milliseconds(10));
    }
    inFlightOps_ += reserve;
  }
  // Compiled outside the lock: other sizes compile meanwhile. Within one plan
  // each key is one group, so two threads never compile the same key.
  std::string why;
  auto started = std::chrono::steady_clock::now();
  std::shared_ptr<const CompiledSchedule> compiled = compile(file, P, M, v, limits, why);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::lock_guard<std::mutex> lock(mutex_);
  inFlightOps_ -= reserve;
  ++compilations_;
  if (compiled && compiled->ops >= 1'000'000 && seconds > 0)
    opsPerSecond_ = double(compiled->ops) / seconds; // the latest: the machine's load now
  if (why == kPastDeadline) { // not a property of the schedule: not cached
    released_.notify_all();
    error = why;
    return nullptr;
  }
  auto [it, added] = entries_.try_emplace(key, Entry{compiled, why});
  if (added) {
    order_.push_back(key);
    if (compiled)
      cachedOps_ += compiled->ops;
    evict(opBudget_);
  }
  released_.notify_all();
  error = it->second.error;
  return it->second.compiled;
}

bool ScheduleCache::contains(const std::string &file, int64_t P, int64_t M, int64_t v) {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.count(Key{file, P, M, v}) > 0;
}

double ScheduleCache::expectedSeconds(uint64_t ops) {
  std::lock_guard<std::mutex> lock(mutex_);
  return opsPerSecond_ > 0 ? double(ops) / opsPerSecond_ : 0;
}

uint64_t ScheduleCache::opsInUse() {
  uint64_t ops = 0;
  for (const auto &[key, entry] : entries_)
    if (entry.compiled && entry.compiled.use_count() > 1)
      ops += entry.compiled->ops;
  return ops;
}

void ScheduleCache::evict(uint64_t budget) {
  for (auto it = order_.begin(); cachedOps_ > budget && it != order_.end();) {
    auto entry = entries_.find(*it);
    // Refusals cost nothing to keep; schedules in use stay until released.
    if (!entry->second.compiled || entry->second.compiled.use_count() > 1) {
      ++it;
      continue;
    }
    cachedOps_ -= entry->second.compiled->ops;
    entries_.erase(entry);
    it = order_.erase(it);
  }
}

std::vector<std::string> ScheduleCache::parameterNames(const std::string &file,
                                                       std::string &error) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = names_.find(file);
  if (it == names_.end()) {
    Compilation probe(file);
    std::vector<std::string> names;
    std::string why;
    if (probe.load() && probe.parse())
      for (const ast::Param &p : probe.ast()->params)
        names.push_back(p.var.name);
    else
      why = firstError(probe);
    it = names_.emplace(file, std::make_pair(std::move(names), std::move(why))).first;
  }
  error = it->second.second;
  return it->second.first;
}

} // namespace pipec::plan
