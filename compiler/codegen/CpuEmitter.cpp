#include "codegen/CpuEmitter.h"

#include "codegen/ProgramTables.h"
#include "codegen/StreamLowering.h"

namespace pipec {

void emitCpuProgram(const ScheduleIR &ir, const CheckReport &report, const StreamPlanCosts &costs,
                    const std::string &sourcePath, llvm::raw_ostream &out) {
  std::vector<RankStreamProgram> streams = lowerToStreams(ir, report, costs.model);
  writeProgramHeader(ir, report, sourcePath,
                     {"cpu",
                      {"The runtime runs the stream programs the CUDA target runs: per rank a "
                       "compute stream, an expert stream for the all-to-alls of overlap pairs and "
                       "one stream per point-to-point channel."}},
                     out);
  writeStreamSummary(streams, out);
  pipert::ProgramData data = programData(ir, report);
  addStreams(data, std::move(streams));
  writeProgramData(data, "pipert/Program.h", out);
  out << "\nint main(int argc, char **argv) {\n"
      << "  return pipert::runEncodedProgram(kProgramData, sizeof kProgramData - 1, argc, argv);\n"
      << "}\n";
}

} // namespace pipec
