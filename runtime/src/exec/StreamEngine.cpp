#include "exec/StreamEngine.h"

#include "exec/Describe.h"

#include "pipert/ProgramValidation.h"

#include <algorithm>
#include <exception>
#include <new>
#include <thread>

namespace pipert {

namespace {

using Clock = std::chrono::steady_clock;

// The (rank, stream) that posts on one end of a channel: one, so the channel
// has a single producer and a single consumer.
struct ChannelEnd {
  int rank = -1;
  uint16_t stream = 0;
};

} // namespace

StreamEngine::StreamEngine(const Program &program, const StreamProgram &streams,
                           CommandRunner &runner, const EngineOptions &options)
    : program_(program), runner_(runner), options_(options), watchdog_(options.timeoutSeconds) {
  build(streams);
  for (auto &worker : workers_)
    worker->thread = std::thread([this, w = worker.get()] { workerMain(*w); });
}

StreamEngine::~StreamEngine() {
  stopping_.store(true);
  failed_.store(true); // a step still running (another replica failed) is abandoned
  for (auto &worker : workers_)
    worker->waker.wake();
  // After a failure a worker may still be inside a stage: one that returns
  // within the timeout is joined, one that does not is left behind (the
  // program is ending; see stuck()).
  Clock::time_point deadline = Clock::now() + watchdog_.timeout();
  for (auto &worker : workers_) {
    while (worker->heart.running.load() && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (worker->heart.running.load())
      worker->thread.detach();
    else
      worker->thread.join();
  }
}

void StreamEngine::build(const StreamProgram &programs) {
  // Streams, and the worker that runs each.
  std::vector<std::vector<Worker *>> workerOf(program_.numRanks);
  for (int r = 0; r < program_.numRanks; ++r) {
    const RankStreams &rank = programs.ranks[r];
    std::vector<Stream *> mine(rank.numStreams, nullptr);
    for (uint32_t c = 0; c < rank.numCommands; ++c) {
      const StreamCommand &command = rank.commands[c];
      Stream *&stream = mine.at(command.stream);
      if (!stream) {
        streams_.push_back(std::make_unique<Stream>());
        stream = streams_.back().get();
        stream->rank = r;
        stream->index = command.stream;
      }
      stream->entries.push_back(Entry{&command, nullptr, {}});
    }
    workerOf[r].assign(rank.numStreams, nullptr);
    for (Stream *stream : mine) {
      if (!stream)
        continue;
      if (options_.streamThreads || workers_.empty() || workers_.back()->streams.front()->rank != r)
        workers_.push_back(std::make_unique<Worker>());
      workers_.back()->streams.push_back(stream);
      stream->worker = workers_.back().get();
      workerOf[r][stream->index] = workers_.back().get();
    }
    events_.push_back(std::make_unique<std::atomic<uint64_t>[]>(rank.numEvents));
    for (uint32_t e = 0; e < rank.numEvents; ++e)
      events_.back()[e].store(0);
  }
  // Channels, and who is woken when an event is recorded.
  std::map<uint64_t, std::pair<ChannelEnd, ChannelEnd>> ends;
  std::vector<std::vector<Stream *>> byRank(program_.numRanks);
  for (auto &stream : streams_)
    byRank[stream->rank].push_back(stream.get());
  for (int r = 0; r < program_.numRanks; ++r) {
    std::vector<std::pair<Stream *, Entry *>> recordOf(programs.ranks[r].numEvents, {nullptr, nullptr});
    for (Stream *s : byRank[r])
      for (size_t k = 0; k < s->entries.size(); ++k) {
        Entry &e = s->entries[k];
        if (e.command->cmd != StreamCmd::RecordEvent)
          continue;
        recordOf[e.command->arg] = {s, &e};
        if (k > 0 && s->entries[k - 1].command->cmd == StreamCmd::Receive)
          e.received = s->entries[k - 1].command->arg;
      }
    for (Stream *stream : byRank[r])
      for (Entry &e : stream->entries) {
        const StreamCommand &c = *e.command;
        Worker *me = workerOf[r][stream->index];
        if (c.cmd == StreamCmd::WaitEvent) {
          auto [recorder, record] = recordOf[c.arg];
          e.record = record;
          Waker *waiter = &me->waker;
          if (workerOf[r][recorder->index] != me &&
              std::find(record->wakes.begin(), record->wakes.end(), waiter) == record->wakes.end())
            record->wakes.push_back(waiter);
        }
        if (c.cmd != StreamCmd::Send && c.cmd != StreamCmd::Receive)
          continue;
        uint64_t key = channelKey(program_.messages[c.arg]);
        ChannelEnd &end = c.cmd == StreamCmd::Send ? ends[key].first : ends[key].second;
        if (end.rank >= 0 && end.stream != stream->index)
          throw InvalidProgram("rank " + std::to_string(r) + " uses one channel on streams " +
                               std::to_string(end.stream) + " and " + std::to_string(stream->index));
        end = {r, stream->index};
        e.channel = &channels_[key];
      }
  }
  for (auto &[key, end] : ends)
    channels_[key].connect(&workerOf[end.first.rank][end.first.stream]->waker,
                           &workerOf[end.second.rank][end.second.stream]->waker);
}

void StreamEngine::start() {
  running_.store(workers_.size());
  step_.fetch_add(1);
  for (auto &worker : workers_)
    worker->waker.wake();
}

void StreamEngine::wait() {
  std::vector<Pulse> pulses(workers_.size());
  Clock::time_point now = Clock::now();
  for (size_t w = 0; w < workers_.size(); ++w)
    pulses[w] = {workers_[w]->heart.beats.load(), now};
  std::unique_lock<std::mutex> lock(doneMutex_);
  auto over = [&] { return running_.load() == 0 || failed_.load(); };
  while (!done_.wait_for(lock, watchdog_.tick(), over)) {
    lock.unlock();
    checkHeartbeats(pulses);
    lock.lock();
  }
  if (!failed_.load())
    return;
  // Every worker that can stop does (parked ones are woken, a Run in progress
  // ends): then what the step left is safe to read for the trace.
  Clock::time_point deadline = Clock::now() + watchdog_.timeout();
  auto quiet = [&] {
    size_t inRun = 0;
    for (auto &worker : workers_)
      inRun += worker->heart.running.load() != nullptr;
    return running_.load() <= inRun;
  };
  while (!quiet() && Clock::now() < deadline)
    done_.wait_for(lock, watchdog_.tick());
  throw RunFailure(*failure_);
}

bool StreamEngine::stuck() const {
  if (!failed_.load())
    return false;
  for (auto &worker : workers_)
    if (worker->heart.running.load())
      return true;
  return false;
}

void StreamEngine::fail(const RunFailure &failure) {
  {
    std::lock_guard<std::mutex> lock(doneMutex_);
    if (!failure_)
      failure_ = std::make_unique<RunFailure>(failure);
    failed_.store(true);
    done_.notify_all();
  }
  for (auto &worker : workers_)
    worker->waker.wake();
}

bool StreamEngine::anyWorkerInRun() const {
  for (auto &worker : workers_)
    if (worker->heart.running.load())
      return true;
  return false;
}

void StreamEngine::checkHeartbeats(std::vector<Pulse> &pulses) {
  Clock::time_point now = Clock::now();
  for (size_t w = 0; w < workers_.size(); ++w) {
    Worker &worker = *workers_[w];
    uint64_t beats = worker.heart.beats.load(std::memory_order_acquire);
    if (beats != pulses[w].beats) {
      pulses[w] = {beats, now};
      continue;
    }
    const StreamCommand *command = worker.heart.running.load();
    if (beats % 2 == 0 || !command || now - pulses[w].since < watchdog_.timeout())
      continue;
    int rank = worker.heart.rank.load();
    std::string part = command->part == RunPart::Whole
                           ? ""
                           : std::string(" (part ") + runPartName(command->part) + ")";
    fail(watchdog_.failure("rank " + std::to_string(rank) + " is stuck in a stage: " +
                           describeOp(program_, rank, command->arg) + part + " has not returned"));
    return;
  }
}

void StreamEngine::workerMain(Worker &worker) {
  uint64_t step = 0;
  for (;;) {
    uint64_t seen = worker.waker.epoch();
    if (stopping_.load())
      return;
    if (step_.load() == step) { // between steps: no watchdog
      worker.waker.waitPast(seen, Clock::time_point::max());
      continue;
    }
    step = step_.load();
    try {
      runStep(worker, step);
    } catch (const RunFailure &failure) {
      fail(failure);
    } catch (const std::bad_alloc &) {
      fail(rankOutOfMemory(worker.streams.front()->rank));
    } catch (const std::exception &e) {
      fail(rankFailure(worker.streams.front()->rank, e.what()));
    }
    if (running_.fetch_sub(1) == 1) {
      std::lock_guard<std::mutex> lock(doneMutex_);
      done_.notify_all();
    }
  }
}

void StreamEngine::runStep(Worker &worker, uint64_t step) {
  for (Stream *s : worker.streams) {
    s->head = 0;
    s->ticket = 0;
  }
  bool progressed = true; // since the last time the worker found itself stuck
  bool deferred = false;   // gave a worker waiting on a message the first word
  Clock::time_point stuckSince;
  for (;;) {
    uint64_t seen = worker.waker.epoch();
    if (failed_.load(std::memory_order_relaxed))
      return; // the run is over: another worker failed
    bool moved = false, finished = true;
    for (Stream *s : worker.streams) {
      moved |= advance(*s, step);
      finished &= s->head == s->entries.size();
    }
    if (finished)
      return;
    if (moved) {
      progressed = true;
      deferred = false;
      continue;
    }
    if (progressed) {
      stuckSince = Clock::now();
      progressed = false;
    }
    if (!worker.waker.waitPast(seen, stuckSince + watchdog_.timeout()) &&
        Clock::now() >= stuckSince + watchdog_.timeout()) {
      bool late = false; // a wake may have raced the deadline
      for (Stream *s : worker.streams)
        late |= advance(*s, step);
      progressed = true;
      if (late)
        continue;
      // A stream held by its own rank's event (with stream threads) waits one
      // more timeout: the worker waiting on the missing message names it.
      // A worker inside a Run all this time may be what this one waits for:
      // its heartbeat names it (checkHeartbeats), so this one waits on.
      if (anyWorkerInRun())
        continue;
      auto [onMessage, report] = blockedReport(worker);
      if (onMessage || deferred) {
        fail(watchdog_.failure(report));
        return;
      }
      deferred = true;
    }
  }
}

bool StreamEngine::advance(Stream &stream, uint64_t step) {
  bool moved = false;
  std::atomic<uint64_t> *events = events_[stream.rank].get();
  while (stream.head < stream.entries.size()) {
    Entry &e = stream.entries[stream.head];
    const StreamCommand &c = *e.command;
    switch (c.cmd) {
    case StreamCmd::Run: {
      // The heartbeat: odd while inside the stage (a relaxed count the owner
      // alone writes; checkHeartbeats reads it).
      Heartbeat &heart = stream.worker->heart;
      uint64_t beats = heart.beats.load(std::memory_order_relaxed);
      heart.rank.store(stream.rank, std::memory_order_relaxed);
      heart.running.store(&c, std::memory_order_relaxed);
      heart.beats.store(beats + 1, std::memory_order_release);
      struct Beat { // the Run ends, returning or throwing
        Heartbeat &heart;
        uint64_t beats;
        ~Beat() {
          heart.running.store(nullptr, std::memory_order_relaxed);
          heart.beats.store(beats + 2, std::memory_order_release);
        }
      } beat{heart, beats};
      runner_.run(stream.rank, c.arg, c.part);
      break;
    }
    case StreamCmd::RecordEvent:
      events[c.arg].store(step, std::memory_order_release);
      for (Waker *waker : e.wakes)
        waker->wake();
      break;
    case StreamCmd::WaitEvent:
      if (events[c.arg].load(std::memory_order_acquire) != step)
        return moved;
      break;
    case StreamCmd::Send:
      if (static_cast<int64_t>(c.arg) == options_.dropMessage)
        break; // testing: a lost message must trip the watchdog, not hang
      if (stream.ticket == 0) {
        stream.ticket = e.channel->post(c.arg);
        moved = true;
      }
      if (!e.channel->taken(stream.ticket))
        return moved;
      stream.ticket = 0;
      break;
    case StreamCmd::Receive:
      if (!e.channel->offered())
        return moved;
      if (e.channel->offeredMessage() != c.arg)
        throw rankFailure(stream.rank, "expected " + describeMessage(program_, c.arg) +
                                           " (message " + std::to_string(c.arg) +
                                           ") but the channel delivered message " +
                                           std::to_string(e.channel->offeredMessage()) +
                                           ": sends and receives are out of order");
      e.channel->take();
      break;
    }
    ++stream.head;
    moved = true;
  }
  return moved;
}

// What the stuck worker waits for: a message that never came first (a receive,
// or an event recorded when one arrives: the watchdog's usual story), then a
// send, then any other event.
std::pair<bool, std::string> StreamEngine::blockedReport(const Worker &worker) const {
  std::string send, event;
  for (const Stream *s : worker.streams) {
    if (s->head == s->entries.size())
      continue;
    const Entry &e = s->entries[s->head];
    const StreamCommand &c = *e.command;
    std::string rank = "rank " + std::to_string(s->rank);
    uint32_t awaited = c.cmd == StreamCmd::Receive ? c.arg
                       : c.cmd == StreamCmd::WaitEvent ? e.record->received
                                                       : ~0u;
    if (awaited != ~0u) {
      const ProgramMessage &m = program_.messages[awaited];
      return {true, rank + " is waiting for " + describeMessage(program_, awaited) + ", needed by " +
                        describeOp(program_, m.to, m.consumerOp)};
    }
    if (c.cmd == StreamCmd::Send && send.empty())
      send = rank + "'s send stream is waiting for rank " +
             std::to_string(program_.messages[c.arg].to) + " to receive " +
             describeMessage(program_, c.arg);
    if (c.cmd == StreamCmd::WaitEvent && event.empty())
      event = rank + "'s stream " + std::to_string(s->index) + " is waiting for event " +
              std::to_string(c.arg);
  }
  return {false, !send.empty() ? send : event};
}

} // namespace pipert
