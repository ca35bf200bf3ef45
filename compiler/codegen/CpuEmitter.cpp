#include "codegen/CpuEmitter.h"

#include "codegen/ProgramTables.h"

namespace pipec {

void emitCpuProgram(const ScheduleIR &ir, const CheckReport &report,
                    const std::string &sourcePath, llvm::raw_ostream &out) {
  writeProgramTables(ir, report, sourcePath, {"cpu", "pipert/Program.h", {}}, out);
  out << "\nint main(int argc, char **argv) { return pipert::runProgram(kProgram, argc, argv); }\n";
}

} // namespace pipec
