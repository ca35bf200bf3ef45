#include "codegen/CudaEmitter.h"

#include "codegen/ProgramTables.h"
#include "codegen/StreamLowering.h"

namespace pipec {

namespace {

constexpr size_t kCommandsPerLine = 8;

// Short names the command tables use (streamCmdName, runPartName), so a command
// reads as a line of a stream program ({Run,Mlp,0,8}: run op 8's MLP
// sub-operation on stream 0) and a large schedule's file stays small.
void writeCommandAliases(llvm::raw_ostream &out) {
  out << "\n// Stream commands: {command, part, stream, argument}. Streams: 0 compute, 1 expert\n"
      << "// all-to-all, 2.. one per point-to-point channel. Run: op index (All: the\n"
      << "// whole op; Attn/Disp/Mlp/Comb: one sub-operation of an overlap pair);\n"
      << "// Send/Recv: message id; Rec/Wait: record or wait for an event id.\n"
      << "constexpr auto Run = pipert::StreamCmd::Run, Send = pipert::StreamCmd::Send,\n"
      << "               Recv = pipert::StreamCmd::Recv, Rec = pipert::StreamCmd::Record,\n"
      << "               Wait = pipert::StreamCmd::Wait;\n"
      << "constexpr auto All = pipert::RunPart::Whole, Attn = pipert::RunPart::Attention,\n"
      << "               Disp = pipert::RunPart::Dispatch, Mlp = pipert::RunPart::Mlp,\n"
      << "               Comb = pipert::RunPart::Combine;\n";
}

void writeRankCommands(size_t r, const RankStreamProgram &rank, llvm::raw_ostream &out) {
  out << "\n// Rank " << r << ": " << rank.commands.size() << " commands on " << rank.numStreams
      << " streams, " << rank.numEvents << " events, " << rank.numPairs << " overlap pairs.\n";
  if (rank.commands.empty())
    return;
  out << "static const pipert::StreamCommand kRank" << r << "Commands[] = {";
  writeRows(rank.commands.size(), kCommandsPerLine, Layout::Rows, out, [&](size_t i) {
    const StreamCommand &c = rank.commands[i];
    out << '{' << streamCmdName(c.cmd) << ',' << runPartName(c.part) << ',' << c.stream << ','
        << c.arg << '}';
  });
  out << "};\n";
}

} // namespace

void emitCudaProgram(const ScheduleIR &ir, const CheckReport &report, const CostModel &costs,
                     const std::string &sourcePath, llvm::raw_ostream &out) {
  std::vector<RankStreamProgram> streams = lowerToStreams(ir, report, costs);
  writeProgramTables(ir, report, sourcePath,
                     {"cuda", "pipert/CudaProgram.h",
                      "Overlap pairs run their sub-operations on the compute and expert streams "
                      "in the order of the simulator's two-stream plan under the schedule's "
                      "cost model."},
                     out);
  writeCommandAliases(out);
  for (size_t r = 0; r < streams.size(); ++r)
    writeRankCommands(r, streams[r], out);
  out << "\nstatic const pipert::RankStreams kRankStreams[] = {\n";
  for (size_t r = 0; r < streams.size(); ++r) {
    const RankStreamProgram &rank = streams[r];
    out << "    {" << (rank.commands.empty() ? "nullptr" : "kRank" + std::to_string(r) + "Commands")
        << ", " << rank.commands.size() << ", " << rank.numStreams << ", " << rank.numEvents
        << "},\n";
  }
  out << "};\n"
      << "static const pipert::StreamProgram kStreams = {kRankStreams};\n"
      << "\nint main(int argc, char **argv) {\n"
      << "  return pipert::runCudaProgram(kProgram, kStreams, argc, argv);\n"
      << "}\n";
}

} // namespace pipec
