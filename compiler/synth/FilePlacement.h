// `pipec synth --placement FILE.pipe`: the placement (stage -> rank and chunk,
// per flow) and copies of a schedule file, elaborated at the given -D values.
// Its rank programs are elaborated too (the front end does) but not used.
#pragma once

#include "synth/SynthProblem.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pipec::synth {

struct FileLayout {
  StagePlacement layout;
  int microbatches = 0;
  std::string name; // the file's schedule name
};

// Empty `error` on success; else the front end's diagnostics or what is out of
// synth's range (at most `maxRanks` ranks and `maxMicrobatches` micro-batches).
FileLayout layoutFromFile(const std::string &path,
                          const std::vector<std::pair<std::string, int64_t>> &defines,
                          int maxRanks, int maxMicrobatches, std::string &error);

} // namespace pipec::synth
