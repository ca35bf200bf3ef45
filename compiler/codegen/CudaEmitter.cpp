#include "codegen/CudaEmitter.h"

#include "codegen/ProgramTables.h"

namespace pipec {

namespace {

// Up to this many ranks each rank's streams are named in the header comment;
// --dump-program prints every rank's commands.
constexpr size_t kLegendRanks = 16;

// The inputs besides the schedule that decided the overlap plans.
std::string costParagraph(const ScheduleIR &ir, const StreamPlanCosts &costs) {
  auto list = [](const auto &settings) {
    std::string text;
    for (const auto &c : settings)
      text += (text.empty() ? "" : ", ") + costText(c.name, c.stage, c.value);
    return text.empty() ? std::string("none") : text;
  };
  std::string text = "Cost inputs of the overlap plans: the schedule's costs block: " +
                     list(ir.costs) + "; --costs and --cost, in order: " +
                     list(costs.overrides) + "; ";
  if (costs.defaultSplitStages.empty())
    return text + "the default sub-operation split: not used.";
  std::string stages;
  for (int64_t s : costs.defaultSplitStages)
    stages += (stages.empty() ? "" : ", ") + std::to_string(s);
  return text + "the default sub-operation split (attention and MLP half of F or B each, "
                "dispatch and combine a quarter each) for stage" +
         (costs.defaultSplitStages.size() == 1 ? " " : "s ") + stages + ".";
}

void writeLegend(const RankStreamProgram &rank, llvm::raw_ostream &out) {
  out << "//   stream " << kComputeStream << ": compute\n"
      << "//   stream " << kExpertStream << ": expert all-to-alls of overlap pairs\n";
  for (size_t c = 0; c < rank.channels.size(); ++c) {
    const StreamChannel &channel = rank.channels[c];
    out << "//   stream " << kFirstChannelStream + c << ": "
        << (channel.sends ? "send " : "receive ")
        << (channel.gradient ? "gradients" : "activations")
        << (channel.sends ? " to rank " : " from rank ") << channel.peer << "\n";
  }
}

void writeStreamCounts(const std::vector<RankStreamProgram> &streams, llvm::raw_ostream &out) {
  out << "//\n";
  writeComment("Stream programs: per rank, commands {command, part, stream, argument} "
               "(pipert/StreamProgram.h) on stream 0 (compute), 1 (expert all-to-alls) and "
               "2.. (one per point-to-point channel).",
               out);
  bool legends = streams.size() <= kLegendRanks;
  for (size_t r = 0; r < streams.size(); ++r) {
    const RankStreamProgram &rank = streams[r];
    out << "// Rank " << r << ": " << rank.commands.size() << " commands on " << rank.numStreams
        << " streams, " << rank.numEvents << " events, " << rank.numPairs << " overlap pairs.\n";
    if (legends)
      writeLegend(rank, out);
  }
}

} // namespace

void emitCudaProgram(const ScheduleIR &ir, const CheckReport &report, const StreamPlanCosts &costs,
                     const std::string &sourcePath, llvm::raw_ostream &out) {
  std::vector<RankStreamProgram> streams = lowerToStreams(ir, report, costs.model);
  writeProgramHeader(ir, report, sourcePath,
                     {"cuda",
                      {"Overlap pairs run their sub-operations on the compute and expert streams "
                       "in the order of the simulator's two-stream plan under the schedule's "
                       "cost model.",
                       costParagraph(ir, costs)}},
                     out);
  writeStreamCounts(streams, out);
  pipert::ProgramData data = programData(ir, report);
  data.hasStreams = true;
  data.streams.resize(streams.size());
  for (size_t r = 0; r < streams.size(); ++r) {
    data.streams[r].commands = std::move(streams[r].commands);
    data.streams[r].numStreams = streams[r].numStreams;
    data.streams[r].numEvents = streams[r].numEvents;
  }
  streams.clear();
  writeProgramData(data, "pipert/CudaProgram.h", out);
  out << "\nint main(int argc, char **argv) {\n"
      << "  return pipert::runEncodedCudaProgram(kProgramData, sizeof kProgramData - 1, argc, argv);\n"
      << "}\n";
}

} // namespace pipec
