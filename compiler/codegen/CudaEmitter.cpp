#include "codegen/CudaEmitter.h"

#include "codegen/ProgramTables.h"
#include "sim/SimOutputs.h"

#include "llvm/Support/Format.h"

namespace pipec {

namespace {

constexpr size_t kCommandsPerLine = 4;

// The enum constants the command tables use, under the names the runtime gives
// them (pipert/StreamProgram.h), so a command reads as a line of a stream
// program ({Run,Mlp,0,8}: run op 8's MLP sub-operation on stream 0).
void writeCommandAliases(llvm::raw_ostream &out) {
  out << "\n// Stream commands: {command, part, stream, argument}. Streams: 0 compute, 1 expert\n"
      << "// all-to-all, 2.. one per point-to-point channel (each rank's legend names\n"
      << "// them). Run: op index (All: the whole op; Attn/Disp/Mlp/Comb: one\n"
      << "// sub-operation of an overlap pair); Send/Receive: message id;\n"
      << "// RecordEvent/WaitEvent: event id.\n";
  const char *indent = "constexpr auto ";
  for (auto cmd : {pipert::StreamCmd::Run, pipert::StreamCmd::Send, pipert::StreamCmd::Receive,
                   pipert::StreamCmd::RecordEvent, pipert::StreamCmd::WaitEvent}) {
    out << indent << streamCmdName(cmd) << " = pipert::StreamCmd::" << streamCmdName(cmd);
    indent = ",\n               ";
  }
  out << ";\n";
  indent = "constexpr auto ";
  for (auto [part, name] : {std::pair{RunPart::Whole, "Whole"}, std::pair{RunPart::Attention, "Attention"},
                            std::pair{RunPart::Dispatch, "Dispatch"}, std::pair{RunPart::Mlp, "Mlp"},
                            std::pair{RunPart::Combine, "Combine"}}) {
    out << indent << runPartName(part) << " = pipert::RunPart::" << name;
    indent = ",\n               ";
  }
  out << ";\n";
}

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
  out << "// stream " << kComputeStream << ": compute\n"
      << "// stream " << kExpertStream << ": expert all-to-alls of overlap pairs\n";
  for (size_t c = 0; c < rank.channels.size(); ++c) {
    const StreamChannel &channel = rank.channels[c];
    out << "// stream " << kFirstChannelStream + c << ": "
        << (channel.sends ? "send " : "receive ")
        << (channel.gradient ? "gradients" : "activations")
        << (channel.sends ? " to rank " : " from rank ") << channel.peer << "\n";
  }
}

// The step as `pipec sim` labels it (sim/SimOutputs.h: kind, chunk, index in
// its flow), with stage and micro-batch: "op 4: F0.3 (stage 0, micro-batch
// 3)", "ops 7-8: FB(F0.5|B1.2) (stages 0 and 1, micro-batches 5 and 2)".
std::string stepComment(const ScheduleIR &ir, size_t r, const StreamStep &step) {
  const Op &first = ir.ranks[r].ops[step.firstOp];
  std::string label = stepLabel(ir, int64_t(r), step.firstOp);
  if (step.firstOp == step.lastOp)
    return "op " + std::to_string(step.firstOp) + ": " + label + " (stage " +
           std::to_string(first.stage) + ", micro-batch " + std::to_string(first.microbatch) + ")";
  const Op &second = ir.ranks[r].ops[step.lastOp];
  return "ops " + std::to_string(step.firstOp) + "-" + std::to_string(step.lastOp) + ": " + label +
         " (stages " + std::to_string(first.stage) + " and " + std::to_string(second.stage) +
         ", micro-batches " + std::to_string(first.microbatch) + " and " +
         std::to_string(second.microbatch) + ")";
}

void writeRankCommands(const ScheduleIR &ir, size_t r, const RankStreamProgram &rank,
                       llvm::raw_ostream &out) {
  out << "\n// Rank " << r << ": " << rank.commands.size() << " commands on " << rank.numStreams
      << " streams, " << rank.numEvents << " events, " << rank.numPairs << " overlap pairs.\n";
  writeLegend(rank, out);
  if (rank.commands.empty())
    return;
  out << "static const pipert::StreamCommand kRank" << r << "Commands[] = {\n";
  size_t width = std::to_string(rank.commands.size() - 1).size();
  for (size_t k = 0; k < rank.steps.size(); ++k) {
    size_t begin = rank.steps[k].firstCommand;
    size_t end = k + 1 < rank.steps.size() ? rank.steps[k + 1].firstCommand : rank.commands.size();
    out << "    // " << stepComment(ir, r, rank.steps[k]) << "\n";
    for (size_t i = begin; i < end; ++i) {
      if ((i - begin) % kCommandsPerLine == 0)
        out << "    /* " << llvm::right_justify(std::to_string(i), width) << " */";
      const StreamCommand &c = rank.commands[i];
      out << " {" << streamCmdName(c.cmd) << ',' << runPartName(c.part) << ',' << c.stream << ','
          << c.arg << "},";
      if ((i - begin) % kCommandsPerLine == kCommandsPerLine - 1 || i + 1 == end)
        out << '\n';
    }
  }
  out << "};\n";
}

} // namespace

void emitCudaProgram(const ScheduleIR &ir, const CheckReport &report, const StreamPlanCosts &costs,
                     const std::string &sourcePath, llvm::raw_ostream &out) {
  std::vector<RankStreamProgram> streams = lowerToStreams(ir, report, costs.model);
  writeProgramTables(ir, report, sourcePath,
                     {"cuda", "pipert/CudaProgram.h",
                      {"Overlap pairs run their sub-operations on the compute and expert streams "
                       "in the order of the simulator's two-stream plan under the schedule's "
                       "cost model.",
                       costParagraph(ir, costs)}},
                     out);
  writeCommandAliases(out);
  for (size_t r = 0; r < streams.size(); ++r)
    writeRankCommands(ir, r, streams[r], out);
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
