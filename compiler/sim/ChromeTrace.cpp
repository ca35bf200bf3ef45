// `pipec sim --trace`: a Chrome/Perfetto trace (chrome://tracing, ui.perfetto.dev).
// One process per rank with two threads: compute (its steps) and communication
// (its sends in flight); a flow arrow from each send to the step that receives it.
// One time unit of the cost model is shown as one millisecond.
#include "sim/SimOutputs.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace pipec {

void writeChromeTrace(const ScheduleIR &ir, const CheckReport &report, const SimResult &sim,
                      llvm::raw_ostream &out) {
  const double kMicros = 1000; // per cost unit
  llvm::json::Array events;
  for (size_t r = 0; r < sim.ranks.size(); ++r) {
    int64_t pid = static_cast<int64_t>(r);
    events.push_back(llvm::json::Object{{"ph", "M"}, {"pid", pid}, {"name", "process_name"},
                                        {"args", llvm::json::Object{{"name", "rank " + std::to_string(r)}}}});
    events.push_back(llvm::json::Object{{"ph", "M"}, {"pid", pid}, {"tid", 0}, {"name", "thread_name"},
                                        {"args", llvm::json::Object{{"name", "compute"}}}});
    events.push_back(llvm::json::Object{{"ph", "M"}, {"pid", pid}, {"tid", 1}, {"name", "thread_name"},
                                        {"args", llvm::json::Object{{"name", "communication"}}}});
    for (const StepTiming &step : sim.ranks[r].steps)
      events.push_back(llvm::json::Object{{"ph", "X"}, {"pid", pid}, {"tid", 0},
                                          {"name", stepLabel(ir, r, step.op)}, {"cat", "compute"},
                                          {"ts", step.start * kMicros},
                                          {"dur", (step.end - step.start) * kMicros}});
  }
  const CommPlan &plan = *report.comm;
  for (size_t id = 0; id < plan.messages.size(); ++id) {
    const Message &m = plan.messages[id];
    const MessageTiming &t = sim.messages[id];
    std::string name = std::string(m.kind == MessageKind::Activation ? "activation" : "gradient") +
                       " s" + std::to_string(m.stage) + " mb" + std::to_string(m.microbatch) +
                       " -> rank " + std::to_string(m.to);
    // A visible slice on the sender's communication thread, even for zero transfer time.
    double duration = std::max((t.arrived - t.sent) * kMicros, 1.0);
    events.push_back(llvm::json::Object{{"ph", "X"}, {"pid", m.from}, {"tid", 1}, {"name", name},
                                        {"cat", "p2p"}, {"ts", t.sent * kMicros}, {"dur", duration}});
    const StepTiming &consumer = sim.ranks[m.to].steps[m.consumerStep];
    events.push_back(llvm::json::Object{{"ph", "s"}, {"id", int64_t(id)}, {"pid", m.from}, {"tid", 1},
                                        {"name", "p2p"}, {"cat", "p2p"}, {"ts", t.sent * kMicros}});
    events.push_back(llvm::json::Object{{"ph", "f"}, {"bp", "e"}, {"id", int64_t(id)}, {"pid", m.to},
                                        {"tid", 0}, {"name", "p2p"}, {"cat", "p2p"},
                                        {"ts", consumer.start * kMicros}});
  }
  llvm::json::Object root{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  out << llvm::formatv("{0}", llvm::json::Value(std::move(root))) << "\n";
}

} // namespace pipec
