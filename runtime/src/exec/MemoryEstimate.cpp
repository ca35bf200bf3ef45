// estimateRunMemory and its check (see exec/MemoryEstimate.h).
#include "exec/MemoryEstimate.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <sys/resource.h>
#include <unistd.h>
#include <utility>

namespace pipert {

namespace {

Bytes n(int64_t v) { return Bytes::of(v > 0 ? uint64_t(v) : 0); }

// Values of one stage's parameters (the built-in stages: Model.cpp's shapes).
Bytes stageParameterValues(const RunOptions &o) {
  Bytes h = n(o.hidden);
  Bytes attention = o.attention ? n(4) * h * h : Bytes{};
  if (o.moe) // router h x 4 + 4 experts of h x 2h and 2h x h with biases
    return attention + h * n(4) + n(4) * (n(4) * h * h + n(3) * h);
  return attention + n(8) * h * h + n(5) * h; // h x 4h and 4h x h with biases
}

// Stage instances the ranks hold: (rank, stage) pairs that run an op.
int64_t stageInstances(const Program &program) {
  std::set<std::pair<int, int32_t>> held;
  for (int r = 0; r < program.numRanks; ++r)
    for (uint32_t i = 0; i < program.ranks[r].numOps; ++i)
      if (!onPartner(program.ranks[r].ops[i].kind)) // a Hold or Return names the owner's stage
        held.emplace(r, program.ranks[r].ops[i].stage);
  return int64_t(held.size());
}

std::string gib(Bytes b) {
  if (b.value == UINT64_MAX)
    return "more than 16 EiB";
  char text[64];
  std::snprintf(text, sizeof text, "%llu bytes (%.3g GiB)", (unsigned long long)b.value,
                double(b.value) / double(1ull << 30));
  return text;
}

// The most micro-batches (in units: sizes weigh) rank r has moved off at
// once, in program order: offloaded ones (the host pool's copies live in the
// same memory on a CPU) and evicted ones, from the Evict to the Load. An
// evicted activation is counted where it is held already (the acceptor's
// predicted peak counts it from its Hold to its Return); counting it on the
// owner too bounds what is on the way, the message's buffers between Evict
// and Hold and between Return and Load, and a Hold's or Return's copy beside
// them: an upper estimate, as the rest.
int64_t peakMovedOff(const Program &program, int r) {
  int64_t held = 0, peak = 0;
  const RankTable &t = program.ranks[r];
  for (uint32_t i = 0; i < t.numOps; ++i) {
    const ProgramOp &op = t.ops[i];
    if (!isMemoryOp(op.kind) || onPartner(op.kind))
      continue;
    int64_t units = program.microbatchSizes ? program.microbatchSizes[op.microbatch] : 1;
    held += movesOff(op.kind) ? units : -units;
    peak = std::max(peak, held);
  }
  return peak;
}

} // namespace

MemoryEstimate estimateRunMemory(const Program &program, const RunOptions &o) {
  MemoryEstimate e;
  Bytes element = n(o.fp64 ? 8 : 4);
  Bytes replicas = n(o.ep);
  Bytes tokens = n(o.seq) * n(o.microBatchSize);
  Bytes h = n(o.hidden);
  Bytes batchColumns = o.loss == LossKind::CrossEntropy ? n(1) : h;
  // Inputs and targets of every micro-batch of every replica.
  e.batch = n(2) * replicas * n(program.numMicrobatches) * tokens * batchColumns * element;
  if (o.empty || !o.provider.empty())
    return e; // no work, or a user's stages whose sizes the runtime cannot know
  Bytes state = n(2 + (o.optimizer.kind == OptimizerKind::AdamW ? 2 : o.optimizer.momentum != 0));
  Bytes instances = n(stageInstances(program)) * replicas + (o.check ? n(program.numStages) : Bytes{});
  e.parameters = instances * stageParameterValues(o) * state * element;
  // One micro-batch on one stage: scores and probabilities (and their
  // gradients in the backward), T x T each, and the blocks' T x h values.
  Bytes scores = o.attention ? n(4) * tokens * tokens : Bytes{};
  Bytes perLive = (scores + n(40) * tokens * h) * element;
  int64_t live = 0;
  for (int r = 0; r < program.numRanks; ++r)
    live += (program.predictedPeakActivations ? program.predictedPeakActivations[r] : 0) + 1 +
            peakMovedOff(program, r);
  Bytes liveAll = n(live) * replicas + (o.check ? n(program.numStages) : Bytes{});
  e.activations = liveAll * perLive;
  return e;
}

uint64_t memoryCap(const RunOptions &o) {
  if (o.maxMemoryBytes > 0)
    return uint64_t(o.maxMemoryBytes);
  uint64_t cap = 0;
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && pageSize > 0)
    cap = uint64_t(pages) * uint64_t(pageSize);
  // Of an address-space limit, three quarters: the rest is code, thread stacks
  // (8 MiB reserved each) and the allocator's slack, which the estimate leaves out.
  struct rlimit limit;
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      (cap == 0 || uint64_t(limit.rlim_cur) / 4 * 3 < cap))
    cap = uint64_t(limit.rlim_cur) / 4 * 3;
  return cap;
}

void checkRunMemory(const Program &program, const RunOptions &o) {
  uint64_t cap = memoryCap(o);
  MemoryEstimate e = estimateRunMemory(program, o);
  if (cap == 0 || e.total().value <= cap)
    return;
  std::string sizes = "--hidden " + std::to_string(o.hidden) + ", --seq " + std::to_string(o.seq) +
                      ", --micro-batch-size " + std::to_string(o.microBatchSize) + " (" +
                      std::to_string(int64_t(o.seq) * o.microBatchSize) +
                      " tokens per micro-batch, one causal sequence), " +
                      std::to_string(program.numMicrobatches) + " micro-batches";
  if (o.ep > 1)
    sizes += ", --ep " + std::to_string(o.ep);
  std::string cause = o.maxMemoryBytes > 0 ? "--max-memory"
                                           : "the machine's memory or the address-space limit "
                                             "(--max-memory sets another)";
  throw std::invalid_argument(
      "the run needs about " + gib(e.total()) + " (parameters and optimizer state " +
      gib(e.parameters) + ", activations " + gib(e.activations) + ", batch " + gib(e.batch) +
      ") for " + sizes + ": over the cap of " + gib(Bytes::of(cap)) + ", " + cause +
      "; lower --hidden, --seq or --micro-batch-size");
}

} // namespace pipert
