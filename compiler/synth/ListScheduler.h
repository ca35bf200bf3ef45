// The constructive heuristic: greedy list scheduling in simulated time, in the
// spirit of Zero Bubble's. Each step commits, over all ranks, the op that can
// start earliest; a rank chooses among the ops it could start within a small
// look-ahead window by a priority of kinds (a variant), so a W fills a bubble
// rather than delaying an arriving I or F. Memory is kept safe by admission: a
// micro-batch enters a rank only when the budget has room for all of its
// chunks there, so admitted micro-batches can always finish (no budget
// deadlock). Channels are consumed in the order they were sent.
#pragma once

#include "synth/SynthProblem.h"

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace pipec::synth {

struct ListVariant {
  // Kind priority, best first: e.g. {kI, kF, kW}.
  int order[3] = {kI, kF, kW};
  double window = 0;     // look-ahead, in units of the rank's mean op time
  bool depthFirst = true; // among forwards: the later stage first (else the older micro-batch)
  uint64_t noise = 0;    // 0: deterministic ties; else a seed for random tie-breaking
  // Warm-up cap: rank r admits at most chunks * (P - r) + slack activations (as
  // 1F1B and ZB-H1 do with slack 0), never more than the budget; -1: the budget only.
  int slack = -1;
  // Admit a micro-batch only with room for it on every rank of its path.
  bool wholePath = false;
};

// The orders the heuristic builds, or nothing when it gets stuck (budget too small).
std::optional<RankOrders> listSchedule(const SynthProblem &problem, const ListVariant &variant);

// The shape the library's schedules share (1F1B, ZB-H1, interleaved, ZB-V,
// DualPipe): each rank runs `warmup` forwards, then forwards and backwards in
// turn, and holds at most `defer` weight halves back (a W runs early when it
// fits in a wait). Which forward or backward comes next is decided in
// simulated time, among ops whose messages are at the head of their channel.
// With --overlap, a forward and a backward that save time together are paired.
struct PhasedVariant {
  std::vector<int> warmup, defer; // per rank
  bool depthFirst = true;         // among forwards: the later stage first
  // Which forward (backward) comes next. Arrival: the one that can start
  // first. Lead: a rank's first stage leads by leadF[r] forwards, then its
  // stages take turns, the last one first (ZB-V, DualPipe); backwards the same
  // from the last stage with leadI[r]. Groups: P micro-batches per stage in
  // turn, backwards from the last stage (interleaved 1F1B).
  // Phases (two stages on a rank, ZB-V and DualPipe): forwards of the first
  // stage only (phaseF[0]), both in turn (phaseF[1] times each, the second
  // stage first unless ownFirst), the second only (phaseF[2]), then in turn;
  // backwards as for Lead.
  enum class Sequence { Arrival, Lead, Groups, Phases } sequence = Sequence::Arrival;
  std::vector<int> leadF, leadI;  // per rank, for Lead
  std::vector<std::array<int, 3>> phaseF; // per rank, for Phases
  bool ownFirst = false;
  // Once a rank's forwards are done, its backwards go first and W only fills
  // waits (ZB-V's and DualPipe's cool-down).
  bool drainInputs = false;
};

std::optional<RankOrders> phasedSchedule(const SynthProblem &problem, const PhasedVariant &variant);

} // namespace pipec::synth
