// `pipec sim --trace`: a Chrome/Perfetto trace (chrome://tracing, ui.perfetto.dev).
// One process per rank with two threads: compute (its steps) and communication
// (its sends in flight); a flow arrow from each send to the step that receives it.
// One time unit of the cost model is shown as one millisecond.
#include "sim/SimOutputs.h"

#include "llvm/Support/JSON.h"

#include <algorithm>

namespace pipec {

// Streamed event by event (nothing the size of the schedule is built in memory),
// keys in sorted order as llvm::json prints an Object.
bool writeChromeTrace(const ScheduleIR &ir, const CheckReport &report, const SimResult &sim,
                      llvm::raw_ostream &out, double microsPerUnit) {
  if (!undrawableReason(sim).empty())
    return false; // JSON has no infinity
  const double kMicros = microsPerUnit; // trace microseconds per cost unit
  llvm::json::OStream j(out);
  auto metadata = [&](int64_t pid, int64_t tid, const char *what, const std::string &name) {
    j.object([&] {
      j.attributeObject("args", [&] { j.attribute("name", name); });
      j.attribute("name", what);
      j.attribute("ph", "M");
      j.attribute("pid", pid);
      if (tid >= 0)
        j.attribute("tid", tid);
    });
  };
  j.object([&] {
    j.attribute("displayTimeUnit", "ms");
    j.attributeArray("traceEvents", [&] {
      for (size_t r = 0; r < sim.ranks.size(); ++r) {
        int64_t pid = static_cast<int64_t>(r);
        metadata(pid, -1, "process_name", "rank " + std::to_string(r));
        metadata(pid, 0, "thread_name", "compute");
        metadata(pid, 1, "thread_name", "communication");
        bool copies = false; // memory ops: the copy stream, a thread of its own
        for (uint32_t k = sim.firstStep(r); k < sim.endStep(r) && !copies; ++k)
          copies = sim.plan->onCopyStream(k);
        if (copies)
          metadata(pid, 2, "thread_name", "copy");
        for (uint32_t k = sim.firstStep(r); k < sim.endStep(r); ++k) {
          StepTiming step = sim.step(k);
          bool copy = sim.plan->onCopyStream(k);
          j.object([&] {
            j.attribute("cat", copy ? "copy" : "compute");
            j.attribute("dur", (step.end - step.start) * kMicros);
            j.attribute("name", stepLabel(ir, r, step.op));
            j.attribute("ph", "X");
            j.attribute("pid", pid);
            j.attribute("tid", copy ? 2 : 0);
            j.attribute("ts", step.start * kMicros);
          });
        }
      }
      const CommPlan &plan = *report.comm;
      std::vector<double> channelFree(plan.numChannels, 0.0);
      for (size_t id = 0; id < plan.messages.size(); ++id) {
        const Message &m = plan.messages[id];
        const Op &producer = plan.producerOp(ir, m);
        double arrived = sim.messageArrived[id];
        double sent = sim.sent(static_cast<uint32_t>(id), channelFree);
        std::string name =
            std::string(m.kind == MessageKind::Activation ? "activation"
                        : m.kind == MessageKind::Gradient ? "gradient"
                        : m.kind == MessageKind::Evicted  ? "evicted activation"
                                                          : "returned activation") +
            " s" +
            std::to_string(producer.stage) + " mb" + std::to_string(producer.microbatch) + " -> rank " +
            std::to_string(plan.to(m));
        // A visible slice on the sender's communication thread, even for zero transfer time.
        double duration = std::max((arrived - sent) * kMicros, 1.0);
        j.object([&] {
          j.attribute("cat", "p2p");
          j.attribute("dur", duration);
          j.attribute("name", name);
          j.attribute("ph", "X");
          j.attribute("pid", plan.from(m));
          j.attribute("tid", 1);
          j.attribute("ts", sent * kMicros);
        });
        j.object([&] {
          j.attribute("cat", "p2p");
          j.attribute("id", int64_t(id));
          j.attribute("name", "p2p");
          j.attribute("ph", "s");
          j.attribute("pid", plan.from(m));
          j.attribute("tid", 1);
          j.attribute("ts", sent * kMicros);
        });
        uint32_t consumerStep = sim.firstStep(plan.to(m)) + m.consumerStep;
        double consumerStart = sim.stepStart(consumerStep);
        j.object([&] {
          j.attribute("bp", "e");
          j.attribute("cat", "p2p");
          j.attribute("id", int64_t(id));
          j.attribute("name", "p2p");
          j.attribute("ph", "f");
          j.attribute("pid", plan.to(m));
          j.attribute("tid", sim.plan->onCopyStream(consumerStep) ? 2 : 0);
          j.attribute("ts", consumerStart * kMicros);
        });
      }
    });
  });
  out << "\n";
  return true;
}

} // namespace pipec
