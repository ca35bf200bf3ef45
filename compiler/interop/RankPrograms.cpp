#include "interop/RankPrograms.h"

#include <algorithm>

namespace pipec {

namespace {

// `next` is `step` `by` micro-batches later: a loop's iteration `by`.
bool followedBy(const PipeStep &step, const PipeStep &next, int64_t by) {
  if (next.count != step.count)
    return false;
  for (int k = 0; k < step.count; ++k)
    if (next.ops[k].kind != step.ops[k].kind || next.ops[k].chunk != step.ops[k].chunk ||
        next.ops[k].microbatch != step.ops[k].microbatch + by)
      return false;
  return true;
}

bool sameOps(const PipeStep &a, const PipeStep &b) {
  return a.count == b.count && a.ops[0].kind == b.ops[0].kind &&
         a.ops[0].chunk == b.ops[0].chunk && a.ops[0].microbatch == b.ops[0].microbatch &&
         (a.count == 1 || (a.ops[1].kind == b.ops[1].kind && a.ops[1].chunk == b.ops[1].chunk &&
                           a.ops[1].microbatch == b.ops[1].microbatch));
}

// Whether `steps` from `at` repeat `body`'s kinds and chunks once more, each
// op `repeat` micro-batches after the same op at `first`.
bool repeatsShape(const std::vector<PipeStep> &body, const std::vector<PipeStep> &steps,
                  size_t first, size_t at, int64_t repeat) {
  if (at + body.size() > steps.size())
    return false;
  for (size_t k = 0; k < body.size(); ++k) {
    const PipeStep &shape = body[k], &step = steps[at + k], &start = steps[first + k];
    if (step.count != shape.count)
      return false;
    for (int o = 0; o < shape.count; ++o)
      if (step.ops[o].kind != shape.ops[o].kind || step.ops[o].chunk != shape.ops[o].chunk ||
          step.ops[o].microbatch != start.ops[o].microbatch + repeat)
        return false;
  }
  return true;
}

// `steps` read as `shape`'s runs in order, each as many times as it repeats
// (0 included): the index of each run's first step and its count, or nullopt
// when steps are left over.
std::optional<std::vector<std::pair<size_t, int64_t>>>
matchShape(const std::vector<StepRun> &shape, const std::vector<PipeStep> &steps) {
  std::vector<std::pair<size_t, int64_t>> matched;
  size_t at = 0;
  for (const StepRun &run : shape) {
    int64_t count = 0;
    while (repeatsShape(run.body, steps, at, at + count * run.body.size(), count))
      ++count;
    matched.push_back({at, count});
    at += count * run.body.size();
  }
  if (at != steps.size())
    return std::nullopt;
  return matched;
}

// The affine function through every (rank, value) point, if there is one
// with integer coefficients.
std::optional<RankAffine> fitAffine(const std::vector<std::pair<int64_t, int64_t>> &points) {
  if (points.empty())
    return RankAffine{};
  auto [r0, v0] = points.front();
  RankAffine fit{v0, 0};
  if (points.size() > 1) {
    auto [r1, v1] = points[1];
    if ((v1 - v0) % (r1 - r0) != 0)
      return std::nullopt;
    fit.slope = (v1 - v0) / (r1 - r0);
    fit.base = v0 - fit.slope * r0;
  }
  for (auto [r, v] : points)
    if (fit.at(r) != v)
      return std::nullopt;
  return fit;
}

// One program for ranks first..end in the runs of `shape` (some rank's own),
// or nullopt.
std::optional<SharedProgram> shareAs(const std::vector<StepRun> &shape,
                                     const std::vector<std::vector<PipeStep>> &programs,
                                     int64_t first, int64_t end) {
  // matched[r - first][j]: where run j starts on rank r, and its count there.
  std::vector<std::vector<std::pair<size_t, int64_t>>> matched;
  for (int64_t r = first; r < end; ++r) {
    auto m = matchShape(shape, programs[r]);
    if (!m)
      return std::nullopt;
    matched.push_back(std::move(*m));
  }
  SharedProgram shared{first, end, {}};
  for (size_t j = 0; j < shape.size(); ++j) {
    SharedRun run;
    std::vector<std::pair<int64_t, int64_t>> counts;
    for (int64_t r = first; r < end; ++r)
      counts.push_back({r, matched[r - first][j].second});
    std::optional<RankAffine> count = fitAffine(counts);
    if (!count)
      return std::nullopt;
    if (count->base == 0 && count->slope == 0)
      continue; // no rank of the group runs it
    run.count = *count;
    for (size_t k = 0; k < shape[j].body.size(); ++k) {
      const PipeStep &step = shape[j].body[k];
      SharedStep sharedStep;
      sharedStep.count = step.count;
      for (int o = 0; o < step.count; ++o) {
        // Only the ranks that run it say where its micro-batches start.
        std::vector<std::pair<int64_t, int64_t>> microbatches;
        for (int64_t r = first; r < end; ++r)
          if (auto [at, n] = matched[r - first][j]; n > 0)
            microbatches.push_back({r, programs[r][at + k].ops[o].microbatch});
        std::optional<RankAffine> microbatch = fitAffine(microbatches);
        if (!microbatch)
          return std::nullopt;
        sharedStep.ops[o] = {step.ops[o].kind, step.ops[o].chunk, *microbatch};
      }
      run.body.push_back(sharedStep);
    }
    shared.runs.push_back(std::move(run));
  }
  // The fits are exact by construction; the expansion is the proof.
  for (int64_t r = first; r < end; ++r) {
    std::vector<PipeStep> expanded = expandSharedProgram(shared, r);
    if (expanded.size() != programs[r].size() ||
        !std::equal(expanded.begin(), expanded.end(), programs[r].begin(), sameOps))
      return std::nullopt;
  }
  return shared;
}

// Two runs read alike: the same body kinds and chunks (a body is its own
// iteration 0).
bool sameShape(const StepRun &a, const StepRun &b) {
  return a.body.size() == b.body.size() && repeatsShape(a.body, b.body, 0, 0, 0);
}

// A rank's steps as candidate shapes: its own runs, and its first step on
// its own before the runs of the rest. The second reads 1F1B's last rank, F
// then B and F in turn, as the other ranks' warm-up, steady state and
// cool-down, where its own runs are pairs of F and B.
std::vector<std::vector<StepRun>> candidateShapes(const std::vector<PipeStep> &steps) {
  std::vector<std::vector<StepRun>> shapes = {stepRuns(steps, 2)};
  if (steps.size() > 1) {
    std::vector<StepRun> shifted = {StepRun{{steps[0]}, 1}};
    for (StepRun &run : stepRuns(std::vector<PipeStep>(steps.begin() + 1, steps.end()), 2))
      shifted.push_back(std::move(run));
    shapes.push_back(std::move(shifted));
  }
  return shapes;
}

bool sameShapes(const std::vector<StepRun> &a, const std::vector<StepRun> &b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), sameShape);
}

// One program for ranks first..end, or nullopt. The ranks' candidate shapes
// are tried, those with fewer runs first (the simplest program that reads
// every rank), each distinct one once, at most kMaxShapes of them.
std::optional<SharedProgram> shareRange(const std::vector<std::vector<PipeStep>> &programs,
                                        const std::vector<std::vector<std::vector<StepRun>>> &shapes,
                                        int64_t first, int64_t end) {
  constexpr size_t kMaxShapes = 8;
  std::vector<const std::vector<StepRun> *> order;
  for (int64_t r = first; r < end; ++r)
    for (const std::vector<StepRun> &shape : shapes[r])
      order.push_back(&shape);
  std::stable_sort(order.begin(), order.end(),
                   [](auto *a, auto *b) { return a->size() < b->size(); });
  std::vector<const std::vector<StepRun> *> tried;
  for (const std::vector<StepRun> *shape : order) {
    if (tried.size() == kMaxShapes)
      break;
    if (std::any_of(tried.begin(), tried.end(),
                    [&](auto *seen) { return sameShapes(*seen, *shape); }))
      continue;
    tried.push_back(shape);
    if (auto shared = shareAs(*shape, programs, first, end))
      return shared;
  }
  return std::nullopt;
}

} // namespace

std::vector<StepRun> stepRuns(const std::vector<PipeStep> &steps, size_t minCovered) {
  constexpr size_t kMaxBody = 4;
  std::vector<StepRun> runs;
  for (size_t at = 0; at < steps.size();) {
    size_t bestBody = 1, bestRepeats = 1;
    for (size_t body = 1; body <= kMaxBody && at + 2 * body <= steps.size(); ++body) {
      size_t repeats = 1;
      while (at + (repeats + 1) * body <= steps.size()) {
        bool same = true;
        for (size_t k = 0; same && k < body; ++k)
          same = followedBy(steps[at + k], steps[at + repeats * body + k], int64_t(repeats));
        if (!same)
          break;
        ++repeats;
      }
      if (repeats >= 2 && repeats * body >= minCovered && repeats * body > bestRepeats * bestBody)
        bestBody = body, bestRepeats = repeats;
    }
    runs.push_back({std::vector<PipeStep>(steps.begin() + at, steps.begin() + at + bestBody),
                    int64_t(bestRepeats)});
    at += bestBody * bestRepeats;
  }
  return runs;
}

std::vector<PipeStep> expandSharedProgram(const SharedProgram &program, int64_t rank) {
  std::vector<PipeStep> steps;
  for (const SharedRun &run : program.runs)
    for (int64_t i = 0, n = run.count.at(rank); i < n; ++i)
      for (const SharedStep &shared : run.body) {
        PipeStep step;
        step.count = shared.count;
        for (int o = 0; o < shared.count; ++o)
          step.ops[o] = {shared.ops[o].kind, shared.ops[o].chunk,
                         shared.ops[o].microbatch.at(rank) + i};
        steps.push_back(step);
      }
  return steps;
}

std::vector<SharedProgram> shareRankPrograms(const std::vector<std::vector<PipeStep>> &programs) {
  int64_t ranks = int64_t(programs.size());
  std::vector<std::vector<std::vector<StepRun>>> shapes;
  shapes.reserve(programs.size());
  for (const std::vector<PipeStep> &steps : programs)
    shapes.push_back(candidateShapes(steps));
  // Two ranks fit any affine function, so a group has three or more, lest
  // two unlike programs become one with odd slopes. From
  // each first rank, the smallest group is tried (one attempt for a rank that
  // starts none), then the length doubled while it shares and halved back onto
  // the longest that does: a group of n ranks costs about 2 log n attempts,
  // each linear in its steps.
  const int64_t smallest = 3;
  std::vector<SharedProgram> groups;
  for (int64_t first = 0; first + smallest <= ranks;) {
    std::optional<SharedProgram> best = shareRange(programs, shapes, first, first + smallest);
    if (!best) {
      ++first;
      continue;
    }
    int64_t good = smallest, bad = ranks - first + 1;
    for (int64_t length = 2 * smallest; length < bad; length = std::min(2 * length, ranks - first)) {
      if (auto shared = shareRange(programs, shapes, first, first + length)) {
        best = std::move(shared);
        good = length;
        if (length == ranks - first)
          break;
      } else {
        bad = length;
      }
    }
    while (bad - good > 1 && good < ranks - first) {
      int64_t middle = good + (bad - good) / 2;
      if (auto shared = shareRange(programs, shapes, first, first + middle)) {
        best = std::move(shared);
        good = middle;
      } else {
        bad = middle;
      }
    }
    groups.push_back(std::move(*best));
    first += good;
  }
  return groups;
}

} // namespace pipec
