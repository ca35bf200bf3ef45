// libFuzzer target: any bytes as a .pipe file through the front end and the
// checks, then, when it checks clean, the simulator and every output `pipec
// sim` writes (text, JSON, ASCII timeline, SVG, Chrome trace), into memory.
// Lines starting with "//cost " are --cost flags (`//cost F=1e308`), so the
// fuzzer also reaches huge, tiny and zero costs. It must never crash or hang;
// limits are lowered so that every input finishes quickly.
#include "cost/CostInput.h"
#include "cost/CostModel.h"
#include "frontend/Compilation.h"
#include "sim/SimOutputs.h"
#include "sim/Simulator.h"

#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

namespace {

std::vector<pipec::CostOverride> costFlags(llvm::StringRef text) {
  std::vector<pipec::CostOverride> costs;
  llvm::SmallVector<llvm::StringRef, 32> lines;
  text.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    std::string error;
    if (line.consume_front("//cost "))
      if (auto cost = pipec::parseCostOverride(line, error))
        costs.push_back(*cost);
  }
  return costs;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace pipec;
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto compilation = Compilation::fromText("fuzz.pipe", text);
  ElabOptions options;
  options.limits.maxOps = 20000;
  options.limits.maxIterations = 200000;
  if (!compilation->runAll(options, CheckOptions()) || !compilation->report()->ok)
    return 0;
  const ScheduleIR *ir = compilation->ir();
  const CheckReport &report = *compilation->report();
  CostModel costs = CostModel::build(*ir, costFlags(text));
  SimResult result = simulate(*ir, report, costs);
  std::string out;
  llvm::raw_string_ostream sink(out);
  printSimText(*ir, report, result, sink);
  printSimJson(*ir, report, result, sink);
  printTimeline(*ir, result, sink);
  writeSvg(*ir, result, sink);
  writeChromeTrace(*ir, report, result, sink);
  return 0;
}
