// The predictions the program codec delta-codes entries against
// (pipert/ProgramEncoding.h): the encoder and the decoder keep the same
// predictor for each table and feed it the same entries in the same order, so
// both make the same guess. A better guess makes a smaller program; a guess
// may be anything, as long as both sides make it alike.
#pragma once

#include "pipert/Program.h"
#include "pipert/StreamProgram.h"

#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

namespace pipert::codec {

// An op is guessed from the last op of its kind and chunk: same stage, next micro-batch.
struct OpPredictor {
  std::map<std::pair<int, int>, std::pair<int64_t, int64_t>> last; // (kind, chunk) -> (stage, mb)
  int64_t chunk = 0;
  std::pair<int64_t, int64_t> guess(int kind, int64_t c) const {
    auto it = last.find({kind, int(c)});
    return it == last.end() ? std::pair<int64_t, int64_t>{0, 0}
                            : std::pair<int64_t, int64_t>{it->second.first, it->second.second + 1};
  }
  void saw(const ProgramOp &op) {
    chunk = op.chunk;
    last[{int(op.kind), int(op.chunk)}] = {op.stage, op.microbatch};
  }
};

// A message is guessed from the last one on its channel: same stage, next
// micro-batch, producer and consumer ops as far on as the last step between
// two; its channel from the message before it. Guesses are int64: a guess past
// a field's range is refused when the value is read, never wrapped.
struct MessageGuess {
  int64_t stage, microbatch, producerOp, consumerOp;
};
struct MessagePredictor {
  struct Channel {
    ProgramMessage last;
    int64_t producerStep = 1, consumerStep = 1;
  };
  std::map<uint64_t, Channel> channels;
  ProgramMessage previous{};
  MessageGuess guess(uint64_t channel) const {
    auto it = channels.find(channel);
    if (it == channels.end())
      return {previous.stage, previous.microbatch, previous.producerOp, previous.consumerOp};
    const Channel &c = it->second;
    return {c.last.stage, int64_t(c.last.microbatch) + 1, int64_t(c.last.producerOp) + c.producerStep,
            int64_t(c.last.consumerOp) + c.consumerStep};
  }
  void saw(const ProgramMessage &m) {
    auto [it, fresh] = channels.try_emplace(channelKey(m));
    if (!fresh) {
      it->second.producerStep = int64_t(m.producerOp) - int64_t(it->second.last.producerOp);
      it->second.consumerStep = int64_t(m.consumerOp) - int64_t(it->second.last.consumerOp);
    }
    it->second.last = m;
    previous = m;
  }
};

// A series of values (an op index, a message id) is guessed to go on as it
// went two values ago: that follows a constant step, and the two interleaved
// series of an overlap pair's halves (373, 372, 375, 374, ...).
struct Series {
  int64_t history[4] = {}; // the last values, newest first
  int size = 0;
  int64_t guess() const {
    if (size >= 4)
      return history[1] + (history[1] - history[3]);
    if (size >= 2)
      return history[0] + (history[0] - history[1]);
    return size ? history[0] + 1 : 0;
  }
  void saw(int64_t value) {
    for (int i = 3; i > 0; --i)
      history[i] = history[i - 1];
    history[0] = value;
    size += size < 4;
  }
};

// A command's stream is guessed from its context, the two commands before it
// (kind and part) and the last one's stream: the stream the last command of
// its kind took in that context (a receive's record stays on its channel
// stream, the wait after it moves to the compute stream, ...), else the
// previous command's stream. Its argument: a record takes the next event id; a
// wait the last event recorded on another stream, moved by as much as the last
// wait in its context was; other commands continue the series of their kind,
// part and stream.
struct CommandPredictor {
  std::map<std::tuple<int, int, int>, Series> series;
  // (the two commands before as kind and part, the stream of the last, cmd)
  std::map<std::tuple<int, int, int64_t, int>, int64_t> streams;
  std::map<int64_t, int64_t> recorded; // event -> stream, the last few
  // A wait's event relative to waitBase, by the context the stream is guessed from.
  std::map<std::tuple<int, int, int64_t, int>, int64_t> waitOffsets;
  int previousCmd = -1, beforeCmd = -1; // kind * 8 + part
  int64_t previousStream = 0, lastRecorded = -1;
  int64_t guessStream(StreamCmd cmd) const {
    auto it = streams.find({beforeCmd, previousCmd, previousStream, int(cmd)});
    return it == streams.end() ? previousStream : it->second;
  }
  // The event a wait is guessed from before its context's correction: the last
  // recorded on another stream.
  int64_t waitBase(const StreamCommand &c) const {
    for (auto it = recorded.rbegin(); it != recorded.rend(); ++it)
      if (it->second != c.stream)
        return it->first;
    return lastRecorded;
  }
  std::tuple<int, int, int64_t, int> waitContext(const StreamCommand &c) const {
    return {beforeCmd, previousCmd, previousStream, int(c.stream)};
  }
  int64_t guessArg(const StreamCommand &c) const {
    if (c.cmd == StreamCmd::RecordEvent)
      return lastRecorded + 1;
    if (c.cmd == StreamCmd::WaitEvent) {
      auto it = waitOffsets.find(waitContext(c));
      return waitBase(c) + (it == waitOffsets.end() ? 0 : it->second);
    }
    auto it = series.find({int(c.cmd), int(c.part), int(c.stream)});
    return it == series.end() ? 0 : it->second.guess();
  }
  void saw(const StreamCommand &c) {
    if (c.cmd == StreamCmd::WaitEvent)
      waitOffsets[waitContext(c)] = int64_t(c.arg) - waitBase(c);
    streams[{beforeCmd, previousCmd, previousStream, int(c.cmd)}] = c.stream;
    beforeCmd = previousCmd;
    previousCmd = int(c.cmd) * 8 + int(c.part);
    previousStream = c.stream;
    if (c.cmd == StreamCmd::RecordEvent) {
      lastRecorded = c.arg;
      recorded[c.arg] = c.stream;
      if (recorded.size() > 8)
        recorded.erase(recorded.begin());
    }
    if (c.cmd == StreamCmd::RecordEvent || c.cmd == StreamCmd::WaitEvent)
      return;
    series[{int(c.cmd), int(c.part), int(c.stream)}].saw(c.arg);
  }
};

} // namespace pipert::codec
