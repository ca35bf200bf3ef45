// Stages that never return, for the watchdog's tests (watchdog.test): each
// passes its input through unchanged, except where it is told to hang.
//   stuck_forward: stage 1's forward of micro-batch 1 blocks (a stage stuck
//                  inside a Run, not a worker waiting for a message);
//   stuck_start:   stage 1 blocks while it is being made (start-up).
// They block in a sleep that never ends, as a stage stuck on a lock or a
// device would: nothing but the process's end stops them.
// With STUCK_STAGE_EXIT_NOTE set, the process's exit handlers say that they
// ran: they do when the failure returned to main, not when something called
// _Exit on the way.
#include "pipert/SimpleStage.h"
#include "pipert/StageRegistry.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

namespace {

struct ExitNote {
  ~ExitNote() {
    if (std::getenv("STUCK_STAGE_EXIT_NOTE"))
      std::fprintf(stderr, "stuck_stage: exit handlers ran\n");
  }
} exitNote;

[[noreturn]] void hang() {
  for (;;)
    std::this_thread::sleep_for(std::chrono::hours(1));
}

template <typename T> class PassThrough final : public pipert::SimpleStage<T> {
public:
  PassThrough(int width, pipert::StageInit init, bool stuck)
      : pipert::SimpleStage<T>("pass_through", width, init), stuck_(stuck) {}
  std::string describe() const override { return "pass_through"; }
  std::vector<pipert::Parameter<T>> parameters() override { return {}; }

protected:
  void computeForward(int mb, const pipert::Tensor<T> &x, pipert::Tensor<T> &y) override {
    if (stuck_ && mb == 1)
      hang();
    y = x;
  }
  void computeInputGrad(int, const pipert::Tensor<T> &dy, pipert::Tensor<T> &dx) override { dx = dy; }
  void computeWeightGrad(int) override {}
  void releaseMicroBatch(int) override {}

private:
  bool stuck_;
};

template <typename T> std::unique_ptr<pipert::Stage<T>> stuckForward(const pipert::StageRequest &r) {
  return std::make_unique<PassThrough<T>>(r.hidden, r.init(), r.stageIndex == 1);
}

template <typename T> std::unique_ptr<pipert::Stage<T>> stuckStart(const pipert::StageRequest &r) {
  if (r.stageIndex == 1)
    hang();
  return std::make_unique<PassThrough<T>>(r.hidden, r.init(), false);
}

pipert::StageProvider forwardProvider() {
  return {"stuck_forward", "stage 1 hangs in the forward of micro-batch 1", stuckForward<float>,
          stuckForward<double>};
}
pipert::StageProvider startProvider() {
  return {"stuck_start", "stage 1 hangs while it is made", stuckStart<float>, stuckStart<double>};
}

} // namespace

PIPERT_REGISTER_STAGES(forwardProvider());
PIPERT_REGISTER_STAGES(startProvider());
