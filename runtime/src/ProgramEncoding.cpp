#include "pipert/ProgramEncoding.h"

#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

namespace pipert {

namespace {

constexpr char kMagic[4] = {'P', 'I', 'P', 'T'};
constexpr uint64_t kFlagStreams = 1;
constexpr int64_t kMaxDelta = int64_t(1) << 40; // far beyond any field's range

uint64_t zigzag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
int64_t unzigzag(uint64_t v) { return int64_t(v >> 1) ^ -int64_t(v & 1); }

// ---- predictions, shared by encoder and decoder so both make the same guess ----

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

// ---- encoding ----

class Writer {
public:
  void byte(uint8_t b) { out_.push_back(b); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(uint8_t(v | 0x80));
      v >>= 7;
    }
    out_.push_back(uint8_t(v));
  }
  void signedVarint(int64_t v) { varint(zigzag(v)); }
  void text(const std::string &s) {
    varint(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  std::vector<uint8_t> take() { return std::move(out_); }

private:
  std::vector<uint8_t> out_;
};

void encodeOps(const std::vector<ProgramOp> &ops, Writer &w) {
  w.varint(ops.size());
  OpPredictor predict;
  for (const ProgramOp &op : ops) {
    auto [stage, mb] = predict.guess(int(op.kind), op.chunk);
    int64_t dChunk = int64_t(op.chunk) - predict.chunk, dStage = op.stage - stage,
            dMb = op.microbatch - mb;
    w.byte(uint8_t(uint8_t(op.kind) & 3) | uint8_t((op.pairedWithNext & 1) << 2) |
           uint8_t(dChunk != 0) << 3 | uint8_t(dStage != 0) << 4 | uint8_t(dMb != 0) << 5);
    // pairedWithNext other than 0/1 and kinds past 3 do not fit: the encoder's
    // caller (pipec) writes only valid kinds and flags.
    for (int64_t d : {dChunk, dStage, dMb})
      if (d != 0)
        w.signedVarint(d);
    predict.saw(op);
  }
}

void encodeIds(const std::vector<uint32_t> &ids, Writer &w) {
  w.varint(ids.size());
  int64_t previous = -1;
  for (uint32_t id : ids) {
    w.signedVarint(int64_t(id) - (previous + 1));
    previous = id;
  }
}

void encodeMessages(const std::vector<ProgramMessage> &messages, Writer &w) {
  w.varint(messages.size());
  MessagePredictor predict;
  for (const ProgramMessage &m : messages) {
    MessageGuess guess = predict.guess(channelKey(m));
    int64_t deltas[] = {int64_t(m.from) - predict.previous.from,
                        int64_t(m.to) - predict.previous.to,
                        m.stage - guess.stage,
                        m.microbatch - guess.microbatch,
                        int64_t(m.producerOp) - guess.producerOp,
                        int64_t(m.consumerOp) - guess.consumerOp};
    uint8_t head = m.gradient & 1;
    for (int i = 0; i < 6; ++i)
      head |= uint8_t(deltas[i] != 0) << (i + 1);
    w.byte(head);
    for (int64_t d : deltas)
      if (d != 0)
        w.signedVarint(d);
    predict.saw(m);
  }
}

void encodeCommands(const std::vector<StreamCommand> &commands, Writer &w) {
  w.varint(commands.size());
  CommandPredictor predict;
  for (const StreamCommand &c : commands) {
    int64_t dStream = int64_t(c.stream) - predict.guessStream(c.cmd);
    int64_t dArg = int64_t(c.arg) - predict.guessArg(c);
    w.byte(uint8_t(uint8_t(c.cmd) & 7) | uint8_t((uint8_t(c.part) & 7) << 3) |
           uint8_t(dStream != 0) << 6 | uint8_t(dArg != 0) << 7);
    if (dStream != 0)
      w.signedVarint(dStream);
    if (dArg != 0)
      w.signedVarint(dArg);
    predict.saw(c);
  }
}

// ---- decoding ----

class Reader {
public:
  Reader(const uint8_t *bytes, size_t size) : bytes_(bytes), size_(size) {}

  bool ok() const { return error_.empty(); }
  const std::string &error() const { return error_; }
  size_t left() const { return size_ - pos_; }
  bool atEnd() const { return pos_ == size_; }

  // Each reader returns false after the first problem and leaves the output unset.
  bool byte(uint8_t &b, const char *what) {
    if (!ok())
      return false;
    if (pos_ >= size_)
      return fail(pos_, std::string("the data ends inside ") + what);
    b = bytes_[pos_++];
    return true;
  }
  bool varint(uint64_t &v, const char *what) {
    if (!ok())
      return false;
    size_t start = pos_;
    v = 0;
    for (int shift = 0;; shift += 7) {
      if (pos_ >= size_)
        return fail(start, std::string("the data ends inside ") + what);
      uint8_t b = bytes_[pos_++];
      if (shift == 63 && b > 1)
        return fail(start, std::string(what) + " overflows 64 bits");
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        return true;
      if (shift == 63)
        return fail(start, std::string(what) + " overflows 64 bits");
    }
  }
  bool signedVarint(int64_t &v, const char *what) {
    uint64_t raw;
    if (!varint(raw, what))
      return false;
    v = unzigzag(raw);
    return true;
  }
  // `raw` as a T, refused when it does not fit.
  template <typename T>
  bool value(T &out, int64_t raw, size_t at, const char *what) {
    if (raw < int64_t(std::numeric_limits<T>::min()) || raw > int64_t(std::numeric_limits<T>::max()))
      return fail(at, std::string(what) + " " + std::to_string(raw) + " does not fit its field");
    out = T(raw);
    return true;
  }
  template <typename T>
  bool unsignedValue(T &out, const char *what) {
    size_t at = pos_;
    uint64_t raw;
    if (!varint(raw, what))
      return false;
    if (raw > uint64_t(std::numeric_limits<int64_t>::max()))
      return fail(at, std::string(what) + " does not fit its field");
    return value(out, int64_t(raw), at, what);
  }
  template <typename T>
  bool signedValue(T &out, const char *what) {
    size_t at = pos_;
    int64_t raw;
    return signedVarint(raw, what) && value(out, raw, at, what);
  }
  // `guess` plus a signed delta. Guesses stay within 2^33 of a field's range
  // and larger deltas are refused first, so the sum cannot overflow.
  template <typename T>
  bool delta(T &out, int64_t guess, const char *what) {
    size_t at = pos_;
    int64_t d = 0;
    if (!signedVarint(d, what))
      return false;
    if (d > kMaxDelta || d < -kMaxDelta)
      return fail(at, std::string(what) + " delta " + std::to_string(d) + " is out of range");
    return value(out, guess + d, at, what);
  }
  // `guess`, or `guess` plus a nonzero delta when `present`.
  template <typename T>
  bool predicted(T &out, int64_t guess, bool present, const char *what) {
    if (!present)
      return value(out, guess, pos_, what);
    size_t at = pos_;
    if (!delta(out, guess, what))
      return false;
    if (int64_t(out) == guess)
      return fail(at, std::string(what) + ": a delta of 0 is written as no delta");
    return true;
  }
  // An entry count: each entry takes at least `bytesPerEntry` bytes, so a
  // count the data cannot hold is refused before anything is allocated for it.
  bool count(size_t &n, const char *what, size_t bytesPerEntry = 1) {
    size_t at = pos_;
    uint64_t raw;
    if (!varint(raw, what))
      return false;
    if (raw > left() / bytesPerEntry)
      return fail(at, std::string(what) + " " + std::to_string(raw) + " is more than the " +
                          std::to_string(left()) + " bytes left can hold");
    n = size_t(raw);
    return true;
  }
  bool text(std::string &s, const char *what) {
    size_t n;
    if (!count(n, what))
      return false;
    s.assign(reinterpret_cast<const char *>(bytes_ + pos_), n);
    pos_ += n;
    return true;
  }
  bool magic() {
    if (size_ < sizeof kMagic || std::memcmp(bytes_, kMagic, sizeof kMagic) != 0)
      return fail(0, "it does not start with \"PIPT\"");
    pos_ = sizeof kMagic;
    return true;
  }
  bool fail(size_t at, const std::string &problem) {
    if (ok())
      error_ = "byte " + std::to_string(at) + ": " + problem;
    return false;
  }
  size_t pos() const { return pos_; }

private:
  const uint8_t *bytes_;
  size_t size_;
  size_t pos_ = 0;
  std::string error_;
};

bool decodeOps(Reader &in, std::vector<ProgramOp> &ops) {
  size_t n;
  if (!in.count(n, "the op count"))
    return false;
  ops.resize(n);
  OpPredictor predict;
  for (ProgramOp &op : ops) {
    uint8_t head = 0;
    if (!in.byte(head, "an op"))
      return false;
    if (head >> 6)
      return in.fail(in.pos() - 1, "an op's lead byte has unused bits set");
    op.kind = OpCode(head & 3);
    op.pairedWithNext = (head >> 2) & 1;
    if (!in.predicted(op.chunk, predict.chunk, head & 8, "an op's chunk"))
      return false;
    auto [stage, mb] = predict.guess(int(op.kind), op.chunk);
    if (!in.predicted(op.stage, stage, head & 16, "an op's stage") ||
        !in.predicted(op.microbatch, mb, head & 32, "an op's micro-batch"))
      return false;
    predict.saw(op);
  }
  return true;
}

bool decodeIds(Reader &in, std::vector<uint32_t> &ids, const char *what) {
  size_t n;
  if (!in.count(n, what))
    return false;
  ids.resize(n);
  int64_t previous = -1;
  for (uint32_t &id : ids) {
    if (!in.delta(id, previous + 1, "a message id"))
      return false;
    previous = id;
  }
  return true;
}

bool decodeMessages(Reader &in, std::vector<ProgramMessage> &messages) {
  size_t n;
  if (!in.count(n, "the message count"))
    return false;
  messages.resize(n);
  MessagePredictor predict;
  for (ProgramMessage &m : messages) {
    uint8_t head = 0;
    if (!in.byte(head, "a message"))
      return false;
    if (head >> 7)
      return in.fail(in.pos() - 1, "a message's lead byte has unused bits set");
    m.gradient = head & 1;
    if (!in.predicted(m.from, predict.previous.from, head & 2, "a message's sender") ||
        !in.predicted(m.to, predict.previous.to, head & 4, "a message's receiver"))
      return false;
    MessageGuess guess = predict.guess(channelKey(m));
    if (!in.predicted(m.stage, guess.stage, head & 8, "a message's stage") ||
        !in.predicted(m.microbatch, guess.microbatch, head & 16, "a message's micro-batch") ||
        !in.predicted(m.producerOp, guess.producerOp, head & 32, "a message's producer op") ||
        !in.predicted(m.consumerOp, guess.consumerOp, head & 64, "a message's consumer op"))
      return false;
    predict.saw(m);
  }
  return true;
}

bool decodeCommands(Reader &in, std::vector<StreamCommand> &commands) {
  size_t n;
  if (!in.count(n, "the command count"))
    return false;
  commands.resize(n);
  CommandPredictor predict;
  for (StreamCommand &c : commands) {
    uint8_t head = 0;
    if (!in.byte(head, "a command"))
      return false;
    if ((head & 7) >= kNumStreamCmds || ((head >> 3) & 7) >= kNumRunParts)
      return in.fail(in.pos() - 1, "a command's lead byte names no command or part");
    c.cmd = StreamCmd(head & 7);
    c.part = RunPart((head >> 3) & 7);
    if (!in.predicted(c.stream, predict.guessStream(c.cmd), head & 64, "a command's stream") ||
        !in.predicted(c.arg, predict.guessArg(c), head & 128, "a command's argument"))
      return false;
    predict.saw(c);
  }
  return true;
}

bool decode(Reader &in, ProgramData &d) {
  uint64_t version, flags;
  if (!in.magic() || !in.varint(version, "the format version"))
    return false;
  if (version != uint64_t(kProgramFormatVersion))
    return in.fail(4, "the data is in program format " + std::to_string(version) +
                          ", this runtime reads format " + std::to_string(kProgramFormatVersion) +
                          ": re-emit it with a matching pipec");
  if (!in.text(d.name, "the schedule name") || !in.text(d.parameters, "the parameters") ||
      !in.signedValue(d.numRanks, "the rank count") ||
      !in.signedValue(d.numStages, "the stage count") ||
      !in.signedValue(d.numMicrobatches, "the micro-batch count") || !in.varint(flags, "the flags"))
    return false;
  if (flags & ~kFlagStreams)
    return in.fail(in.pos() - 1, "unknown flags " + std::to_string(flags));
  d.hasStreams = flags & kFlagStreams;
  // Each rank takes at least three bytes (its three counts).
  if (d.numRanks < 0 || uint64_t(d.numRanks) > in.left() / 3)
    return in.fail(in.pos(), "the rank count " + std::to_string(d.numRanks) +
                                 " does not fit the data");
  d.ranks.resize(size_t(d.numRanks));
  for (ProgramData::Rank &rank : d.ranks)
    if (!decodeOps(in, rank.ops) || !decodeIds(in, rank.sends, "the send count") ||
        !decodeIds(in, rank.receives, "the receive count"))
      return false;
  if (!decodeMessages(in, d.messages))
    return false;
  size_t groups;
  if (!in.count(groups, "the sync group count", 2))
    return false;
  d.syncGroups.resize(groups);
  for (ProgramData::SyncGroup &g : d.syncGroups) {
    size_t slots;
    if (!in.signedValue(g.stage, "a sync group's stage") ||
        !in.count(slots, "a sync group's size", 2))
      return false;
    g.ranks.resize(slots);
    g.chunks.resize(slots);
    for (size_t i = 0; i < slots; ++i)
      if (!in.signedValue(g.ranks[i], "a sync group's rank") ||
          !in.signedValue(g.chunks[i], "a sync group's chunk"))
        return false;
  }
  d.predictedPeakActivations.resize(size_t(d.numRanks));
  for (int64_t &peak : d.predictedPeakActivations)
    if (!in.signedVarint(peak, "a predicted peak"))
      return false;
  if (d.hasStreams) {
    if (uint64_t(d.numRanks) > in.left() / 3)
      return in.fail(in.pos(), "the stream programs do not fit the data");
    d.streams.resize(size_t(d.numRanks));
    for (ProgramData::Streams &s : d.streams)
      if (!in.unsignedValue(s.numStreams, "a stream count") ||
          !in.unsignedValue(s.numEvents, "an event count") || !decodeCommands(in, s.commands))
        return false;
  }
  if (!in.atEnd())
    return in.fail(in.pos(), std::to_string(in.left()) + " bytes follow the tables");
  return true;
}

// ---- text ----

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64Value(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

std::string quoted(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f)
    return std::string("'") + c + "'";
  return "byte " + std::to_string(u);
}

// ---- dump ----

const char *opName(OpCode kind) {
  switch (kind) {
  case OpCode::F: return "F";
  case OpCode::B: return "B";
  case OpCode::I: return "I";
  case OpCode::W: return "W";
  }
  return "?";
}

// Entries [0, count) `perLine` to a line, each line led by its first index.
template <typename Write>
void rows(std::string &out, const std::string &title, size_t count, size_t perLine, Write write) {
  out += title + "[" + std::to_string(count) + "]:";
  for (size_t i = 0; i < count; ++i) {
    if (i % perLine == 0)
      out += "\n    /* " + std::to_string(i) + " */";
    out += ' ';
    write(i);
  }
  out += '\n';
}

std::string idList(const std::string &title, const std::vector<uint32_t> &ids) {
  std::string text = title + "[" + std::to_string(ids.size()) + "]:";
  for (size_t i = 0; i < ids.size(); ++i)
    text += (i ? ", " : " ") + std::to_string(ids[i]);
  return text + "\n";
}

} // namespace

bool operator==(const ProgramData &a, const ProgramData &b) {
  auto sameOp = [](const ProgramOp &x, const ProgramOp &y) {
    return x.kind == y.kind && x.pairedWithNext == y.pairedWithNext && x.chunk == y.chunk &&
           x.stage == y.stage && x.microbatch == y.microbatch;
  };
  auto sameMessage = [](const ProgramMessage &x, const ProgramMessage &y) {
    return x.gradient == y.gradient && x.from == y.from && x.to == y.to && x.stage == y.stage &&
           x.microbatch == y.microbatch && x.producerOp == y.producerOp &&
           x.consumerOp == y.consumerOp;
  };
  auto sameCommand = [](const StreamCommand &x, const StreamCommand &y) {
    return x.cmd == y.cmd && x.part == y.part && x.stream == y.stream && x.arg == y.arg;
  };
  auto sameList = [](const auto &x, const auto &y, auto same) {
    if (x.size() != y.size())
      return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!same(x[i], y[i]))
        return false;
    return true;
  };
  if (a.name != b.name || a.parameters != b.parameters || a.numRanks != b.numRanks ||
      a.numStages != b.numStages || a.numMicrobatches != b.numMicrobatches ||
      a.ranks.size() != b.ranks.size() || !sameList(a.messages, b.messages, sameMessage) ||
      a.syncGroups.size() != b.syncGroups.size() ||
      a.predictedPeakActivations != b.predictedPeakActivations || a.hasStreams != b.hasStreams ||
      a.streams.size() != b.streams.size())
    return false;
  for (size_t r = 0; r < a.ranks.size(); ++r)
    if (!sameList(a.ranks[r].ops, b.ranks[r].ops, sameOp) || a.ranks[r].sends != b.ranks[r].sends ||
        a.ranks[r].receives != b.ranks[r].receives)
      return false;
  for (size_t g = 0; g < a.syncGroups.size(); ++g)
    if (a.syncGroups[g].stage != b.syncGroups[g].stage ||
        a.syncGroups[g].ranks != b.syncGroups[g].ranks ||
        a.syncGroups[g].chunks != b.syncGroups[g].chunks)
      return false;
  for (size_t r = 0; r < a.streams.size(); ++r)
    if (a.streams[r].numStreams != b.streams[r].numStreams ||
        a.streams[r].numEvents != b.streams[r].numEvents ||
        !sameList(a.streams[r].commands, b.streams[r].commands, sameCommand))
      return false;
  return true;
}

ProgramView::ProgramView(const ProgramData &d) {
  auto pointer = [](const auto &v) { return v.empty() ? nullptr : v.data(); };
  for (const ProgramData::Rank &r : d.ranks)
    ranks_.push_back({pointer(r.ops), uint32_t(r.ops.size()), pointer(r.sends),
                      uint32_t(r.sends.size()), pointer(r.receives), uint32_t(r.receives.size())});
  for (const ProgramData::SyncGroup &g : d.syncGroups)
    syncGroups_.push_back({g.stage, pointer(g.ranks), pointer(g.chunks), uint32_t(g.ranks.size())});
  for (const ProgramData::Streams &s : d.streams)
    rankStreams_.push_back({pointer(s.commands), uint32_t(s.commands.size()), s.numStreams,
                            s.numEvents});
  program_.name = d.name.c_str();
  program_.parameters = d.parameters.c_str();
  program_.numRanks = d.numRanks;
  program_.numStages = d.numStages;
  program_.numMicrobatches = d.numMicrobatches;
  program_.ranks = pointer(ranks_);
  program_.messages = pointer(d.messages);
  program_.numMessages = uint32_t(d.messages.size());
  program_.syncGroups = pointer(syncGroups_);
  program_.numSyncGroups = uint32_t(d.syncGroups.size());
  program_.predictedPeakActivations = pointer(d.predictedPeakActivations);
  streams_.ranks = d.hasStreams ? pointer(rankStreams_) : nullptr;
}

std::vector<uint8_t> encodeProgram(const ProgramData &d) {
  Writer w;
  for (char c : kMagic)
    w.byte(uint8_t(c));
  w.varint(uint64_t(kProgramFormatVersion));
  w.text(d.name);
  w.text(d.parameters);
  w.signedVarint(d.numRanks);
  w.signedVarint(d.numStages);
  w.signedVarint(d.numMicrobatches);
  w.varint(d.hasStreams ? kFlagStreams : 0);
  for (const ProgramData::Rank &rank : d.ranks) {
    encodeOps(rank.ops, w);
    encodeIds(rank.sends, w);
    encodeIds(rank.receives, w);
  }
  encodeMessages(d.messages, w);
  w.varint(d.syncGroups.size());
  for (const ProgramData::SyncGroup &g : d.syncGroups) {
    w.signedVarint(g.stage);
    w.varint(g.ranks.size());
    for (size_t i = 0; i < g.ranks.size(); ++i) {
      w.signedVarint(g.ranks[i]);
      w.signedVarint(i < g.chunks.size() ? g.chunks[i] : 0);
    }
  }
  for (int64_t peak : d.predictedPeakActivations)
    w.signedVarint(peak);
  if (d.hasStreams)
    for (const ProgramData::Streams &s : d.streams) {
      w.varint(s.numStreams);
      w.varint(s.numEvents);
      encodeCommands(s.commands, w);
    }
  return w.take();
}

std::string decodeProgram(const uint8_t *bytes, size_t size, ProgramData &data) {
  data = ProgramData();
  Reader in(bytes, size);
  if (!decode(in, data)) {
    data = ProgramData();
    return in.error();
  }
  return "";
}

std::string toBase64(const std::vector<uint8_t> &bytes) {
  std::string text;
  text.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t group = uint32_t(bytes[i]) << 16;
    if (i + 1 < bytes.size())
      group |= uint32_t(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size())
      group |= bytes[i + 2];
    text += kBase64[(group >> 18) & 63];
    text += kBase64[(group >> 12) & 63];
    text += i + 1 < bytes.size() ? kBase64[(group >> 6) & 63] : '=';
    text += i + 2 < bytes.size() ? kBase64[group & 63] : '=';
  }
  return text;
}

std::string fromBase64(const char *text, size_t size, std::vector<uint8_t> &bytes) {
  bytes.clear();
  if (size % 4 != 0)
    return "its length " + std::to_string(size) + " is not a multiple of 4";
  bytes.reserve(size / 4 * 3);
  for (size_t i = 0; i < size; i += 4) {
    uint32_t group = 0;
    int padding = 0;
    for (size_t k = 0; k < 4; ++k) {
      char c = text[i + k];
      int v = base64Value(c);
      if (c == '=' && i + 4 == size && k >= 2 && (k == 3 || text[i + 3] == '=')) {
        ++padding;
        v = 0;
      } else if (v < 0 || padding) {
        bytes.clear();
        return "character " + std::to_string(i + k) + ": " + quoted(c) + " is not base64";
      }
      group = group << 6 | uint32_t(v);
    }
    bytes.push_back(uint8_t(group >> 16));
    if (padding < 2)
      bytes.push_back(uint8_t(group >> 8));
    if (padding < 1)
      bytes.push_back(uint8_t(group));
  }
  return "";
}

std::string decodeProgramText(const char *text, size_t size, ProgramData &data) {
  std::vector<uint8_t> bytes;
  std::string problem = fromBase64(text, size, bytes);
  if (problem.empty())
    problem = decodeProgram(bytes.data(), bytes.size(), data);
  return problem.empty() ? "" : "invalid program data: " + problem;
}

std::string dumpProgram(const ProgramData &d) {
  std::string out = "program " + d.name + " (" + d.parameters + "): " + std::to_string(d.numRanks) +
                    " ranks, " + std::to_string(d.numStages) + " stages, " +
                    std::to_string(d.numMicrobatches) + " micro-batches\n" +
                    "fields as <pipert/Program.h> and <pipert/StreamProgram.h> order them: ops "
                    "{kind, pairedWithNext, chunk, stage, micro-batch}; messages {gradient, from, "
                    "to, stage, micro-batch, producer op, consumer op}; commands {command, part, "
                    "stream, argument}\n";
  for (size_t r = 0; r < d.ranks.size(); ++r) {
    const ProgramData::Rank &rank = d.ranks[r];
    std::string prefix = "kRank" + std::to_string(r);
    rows(out, prefix + "Ops", rank.ops.size(), 6, [&](size_t i) {
      const ProgramOp &op = rank.ops[i];
      out += std::string("{") + opName(op.kind) + "," + std::to_string(op.pairedWithNext) + "," +
             std::to_string(op.chunk) + "," + std::to_string(op.stage) + "," +
             std::to_string(op.microbatch) + "},";
    });
    out += idList(prefix + "Sends", rank.sends);
    out += idList(prefix + "Receives", rank.receives);
  }
  rows(out, "kMessages", d.messages.size(), 4, [&](size_t i) {
    const ProgramMessage &m = d.messages[i];
    out += std::string("{") + (m.gradient ? "Grad" : "Act") + "," + std::to_string(m.from) + "," +
           std::to_string(m.to) + "," + std::to_string(m.stage) + "," +
           std::to_string(m.microbatch) + "," + std::to_string(m.producerOp) + "," +
           std::to_string(m.consumerOp) + "},";
  });
  out += "kSyncGroups[" + std::to_string(d.syncGroups.size()) + "]:";
  for (const ProgramData::SyncGroup &g : d.syncGroups) {
    out += " {stage " + std::to_string(g.stage) + ", slots";
    for (size_t i = 0; i < g.ranks.size() && i < g.chunks.size(); ++i)
      out += (i ? ", (" : " (") + std::to_string(g.ranks[i]) + "," + std::to_string(g.chunks[i]) + ")";
    out += "}";
  }
  out += "\nkPredictedPeakActivations[" + std::to_string(d.predictedPeakActivations.size()) + "]:";
  for (int64_t peak : d.predictedPeakActivations)
    out += " " + std::to_string(peak);
  out += "\n";
  for (size_t r = 0; r < d.streams.size(); ++r) {
    const ProgramData::Streams &s = d.streams[r];
    out += "kRank" + std::to_string(r) + "Streams: " + std::to_string(s.numStreams) + " streams, " +
           std::to_string(s.numEvents) + " events\n";
    rows(out, "kRank" + std::to_string(r) + "Commands", s.commands.size(), 4, [&](size_t i) {
      const StreamCommand &c = s.commands[i];
      out += std::string("{") + streamCmdName(c.cmd) + "," + runPartName(c.part) + "," +
             std::to_string(c.stream) + "," + std::to_string(c.arg) + "},";
    });
  }
  return out;
}

int startEncodedProgram(const char *text, size_t size, int argc, char **argv, ProgramData &data,
                        const char *reemitHint) {
  std::string problem = decodeProgramText(text, size, data);
  if (!problem.empty()) {
    std::fprintf(stderr, "pipert: error: %s\n", problem.c_str());
    return 2;
  }
  if (argc == 2 && std::strcmp(argv[1], "--dump-program") == 0) {
    std::string dump = dumpProgram(data);
    std::fwrite(dump.data(), 1, dump.size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 2;
  }
  if (!data.hasStreams) {
    std::fprintf(stderr, "pipert: error: invalid program data: it holds no stream programs (%s)\n",
                 reemitHint);
    return 2;
  }
  return -1;
}

} // namespace pipert
