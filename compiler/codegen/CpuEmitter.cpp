#include "codegen/CpuEmitter.h"

#include "codegen/ProgramTables.h"

namespace pipec {

void emitCpuProgram(const ScheduleIR &ir, const CheckReport &report,
                    const std::string &sourcePath, llvm::raw_ostream &out) {
  writeProgramHeader(ir, report, sourcePath, {"cpu", {}}, out);
  writeProgramData(programData(ir, report), "pipert/Program.h", out);
  out << "\nint main(int argc, char **argv) {\n"
      << "  return pipert::runEncodedProgram(kProgramData, sizeof kProgramData - 1, argc, argv);\n"
      << "}\n";
}

} // namespace pipec
