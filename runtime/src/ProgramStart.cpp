// Program start-up (pipert/ProgramEncoding.h): what an emitted main() does
// with its encoded tables before anything runs, for both executors: decode
// them, dump them (--dump-program) or refuse data without stream programs, and
// the runtime's view of the decoded tables.
#include "pipert/ProgramEncoding.h"

#include <cstdio>
#include <cstring>

namespace pipert {

ProgramView::ProgramView(const ProgramData &d) {
  auto pointer = [](const auto &v) { return v.empty() ? nullptr : v.data(); };
  for (const ProgramData::Rank &r : d.ranks)
    ranks_.push_back({pointer(r.ops), uint32_t(r.ops.size()), pointer(r.sends),
                      uint32_t(r.sends.size()), pointer(r.receives), uint32_t(r.receives.size())});
  for (const ProgramData::SyncGroup &g : d.syncGroups)
    syncGroups_.push_back({g.stage, pointer(g.ranks), pointer(g.chunks), uint32_t(g.ranks.size())});
  for (const ProgramData::Streams &s : d.streams)
    rankStreams_.push_back({pointer(s.commands), uint32_t(s.commands.size()), s.numStreams,
                            s.numEvents});
  program_.name = d.name.c_str();
  program_.parameters = d.parameters.c_str();
  program_.numRanks = d.numRanks;
  program_.numStages = d.numStages;
  program_.numMicrobatches = d.numMicrobatches;
  program_.ranks = pointer(ranks_);
  program_.messages = pointer(d.messages);
  program_.numMessages = uint32_t(d.messages.size());
  program_.syncGroups = pointer(syncGroups_);
  program_.numSyncGroups = uint32_t(d.syncGroups.size());
  program_.predictedPeakActivations = pointer(d.predictedPeakActivations);
  program_.microbatchSizes = pointer(d.microbatchSizes);
  streams_.ranks = d.hasStreams ? pointer(rankStreams_) : nullptr;
}

int startEncodedProgram(const char *text, size_t size, int argc, char **argv, ProgramData &data,
                        const char *reemitHint) {
  std::string problem = decodeProgramText(text, size, data);
  if (!problem.empty()) {
    std::fprintf(stderr, "pipert: error: %s\n", problem.c_str());
    return 2;
  }
  if (argc == 2 && std::strcmp(argv[1], "--dump-program") == 0) {
    std::string dump = dumpProgram(data);
    std::fwrite(dump.data(), 1, dump.size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 2;
  }
  if (!data.hasStreams) {
    std::fprintf(stderr, "pipert: error: invalid program data: it holds no stream programs (%s)\n",
                 reemitHint);
    return 2;
  }
  return -1;
}

} // namespace pipert
