// The CPU interpreter of a replica's stream programs (pipert/StreamProgram.h),
// the ones the CUDA backend enqueues. Per rank, each stream runs its commands
// in order from a cursor; a command moves when it is ready:
//   Run          always (the CommandRunner does the op's work, or one part);
//   RecordEvent  always: marks the event recorded for this step;
//   WaitEvent    once the event is recorded in this step (the only edge
//                between two streams of a rank);
//   Send         offers the message on its channel, then moves when the
//                receive has taken it (rendezvous, Channel.h);
//   Receive      once the channel offers a message: the expected one, or the
//                run fails naming both (NCCL would hand over the wrong data).
// Workers are persistent threads. Cooperative (default): one worker per rank
// runs whichever of its streams can move, and parks only when none can.
// Stream threads: one worker per stream, every stream a real thread, as
// ThreadSanitizer should see them, and what lets a command that blocks inside
// a stage (the MoE all-to-all of expert parallelism) leave the rank's other
// streams running.
//
// The watchdog (Watchdog.h) has two eyes. A worker that cannot move for the
// timeout reports what it waits for. A worker inside a Run keeps a heartbeat
// (a count bumped as each Run starts and ends), which the thread in wait()
// reads every tick: a Run that has not returned for the timeout is a stuck
// stage, named with its op. Either failure, like an exception from a stage,
// stops every worker and is thrown by wait() as a RunFailure; a worker stuck
// inside a stage cannot be stopped and is left behind (stuck() says so, and
// the destructor does not wait for it).
#pragma once

#include "exec/Channel.h"
#include "exec/Waker.h"
#include "exec/Watchdog.h"

#include "pipert/Program.h"
#include "pipert/StreamProgram.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace pipert {

// What a Run command does: op `op` of `rank`, whole or one part. May be called
// for different ranks, and in stream threads for two streams of one rank, at once.
class CommandRunner {
public:
  virtual ~CommandRunner() = default;
  virtual void run(int rank, uint32_t op, RunPart part) = 0;
};

struct EngineOptions {
  bool streamThreads = false;
  double timeoutSeconds = 60;
  int64_t dropMessage = -1; // testing: this message's Send never offers it
};

class StreamEngine {
public:
  StreamEngine(const Program &program, const StreamProgram &streams, CommandRunner &runner,
               const EngineOptions &options);
  ~StreamEngine();
  StreamEngine(const StreamEngine &) = delete;
  StreamEngine &operator=(const StreamEngine &) = delete;

  // One step: start() lets every worker run its streams from the top, wait()
  // returns when all have finished. Replicas may start() before any wait().
  // wait() throws the run's RunFailure when a worker failed or the watchdog
  // fired; the engine then runs no more steps.
  void start();
  void wait();
  // After a failure: a worker is still inside a stage that never returned.
  bool stuck() const;

  size_t numWorkers() const { return workers_.size(); }

private:
  struct Worker;
  struct Entry {
    const StreamCommand *command;
    Channel *channel = nullptr;              // Send, Receive
    std::vector<Waker *> wakes;              // RecordEvent: other workers waiting on it
    const Entry *record = nullptr;           // WaitEvent: the RecordEvent it waits for
    uint32_t received = ~0u;                 // RecordEvent: the message received just before
  };
  struct Stream {
    int rank;
    uint16_t index;
    std::vector<Entry> entries;
    size_t head = 0;
    uint64_t ticket = 0; // a Send's offer not yet taken
    Worker *worker = nullptr;
  };
  // The heartbeat: odd while inside a Run (of `running`, on `rank`). On its
  // own cache line: the owner writes it around every Run, while other workers
  // write the Waker's counter beside it to wake this one.
  struct alignas(64) Heartbeat {
    std::atomic<uint64_t> beats{0};
    std::atomic<const StreamCommand *> running{nullptr};
    std::atomic<int> rank{0};
  };
  struct Worker {
    Waker waker;
    std::vector<Stream *> streams;
    std::thread thread;
    Heartbeat heart;
  };
  // What the thread in wait() last saw of a worker's heartbeat.
  struct Pulse {
    uint64_t beats = 0;
    std::chrono::steady_clock::time_point since;
  };

  void build(const StreamProgram &streams);
  void workerMain(Worker &worker);
  void runStep(Worker &worker, uint64_t step);
  bool advance(Stream &stream, uint64_t step);
  std::pair<bool, std::string> blockedReport(const Worker &worker) const; // (on a message?, what)
  void fail(const RunFailure &failure); // the first failure wins; every worker stops
  bool anyWorkerInRun() const;
  void checkHeartbeats(std::vector<Pulse> &pulses); // fails the run on a stuck Run

  const Program &program_;
  CommandRunner &runner_;
  EngineOptions options_;
  Watchdog watchdog_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::unique_ptr<std::atomic<uint64_t>[]>> events_; // per rank: the step each was recorded in
  std::map<uint64_t, Channel> channels_;                         // by channelKey
  std::atomic<uint64_t> step_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> running_{0}; // workers still in the step
  std::mutex doneMutex_;
  std::condition_variable done_;
  std::atomic<bool> failed_{false};
  std::unique_ptr<RunFailure> failure_; // set once, under doneMutex_
};

} // namespace pipert
