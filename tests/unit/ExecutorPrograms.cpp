#include "ExecutorPrograms.h"

#include "TestSupport.h"

#include "check/Checks.h"
#include "codegen/ProgramTables.h"
#include "codegen/StreamLowering.h"

#include "pipert/Program.h"

#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

namespace pipec::test {

std::string lowerProgram(const std::string &source,
                         const std::vector<std::pair<std::string, int64_t>> &defines,
                         pipert::ProgramData &data) {
  ElabOptions options;
  options.defines = defines;
  auto compiled = compile(source, options);
  if (!compiled->ir || compiled->diags.hasErrors())
    return "front end: " + compiled->renderedDiagnostics();
  const ScheduleIR &ir = *compiled->ir;
  CheckReport report = runChecks(ir, CheckOptions{}, compiled->diags);
  if (!report.ok || !report.comm)
    return "checks: " + compiled->renderedDiagnostics();
  data = programData(ir, report);
  addStreams(data, lowerToStreams(ir, report, streamPlanCosts(ir, {}).model));
  return "";
}

int runLowered(const pipert::ProgramData &data, const std::vector<std::string> &args) {
  std::vector<std::string> words{"program"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (std::string &w : words)
    argv.push_back(w.data());
  pipert::ProgramView view(data);
  std::fflush(stdout);
  int saved = ::dup(1);
  int null = ::open("/dev/null", O_WRONLY);
  ::dup2(null, 1);
  ::close(null);
  int status = pipert::runProgram(view.program(), view.streams(), int(argv.size()), argv.data());
  std::fflush(stdout);
  ::dup2(saved, 1);
  ::close(saved);
  return status;
}

} // namespace pipec::test
