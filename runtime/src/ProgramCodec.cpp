// The program codec (pipert/ProgramEncoding.h): encodeProgram, decodeProgram
// and the comparison of two programs, each a visitor of the one description
// of the format in ProgramFields.h. Writer and Reader hold the byte-level
// coding (varints, zigzag, counts checked against the bytes left); what goes
// where, in which order, guessed from what, is ProgramFields.h's alone.
#include "ProgramFields.h"

#include <cstring>
#include <limits>
#include <string>
#include <utility>

namespace pipert {

namespace codec {
namespace {

constexpr char kMagic[4] = {'P', 'I', 'P', 'T'};
constexpr uint64_t kFlagStreams = 1;
constexpr uint64_t kFlagSizes = 2; // per-micro-batch sizes follow everything else
constexpr int64_t kMaxDelta = int64_t(1) << 40; // far beyond any field's range

uint64_t zigzag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
int64_t unzigzag(uint64_t v) { return int64_t(v >> 1) ^ -int64_t(v & 1); }

// ---- encoding ----

class Writer {
public:
  explicit Writer(int version) : version_(version) {}
  void byte(uint8_t b) { out_.push_back(b); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(uint8_t(v | 0x80));
      v >>= 7;
    }
    out_.push_back(uint8_t(v));
  }
  void signedVarint(int64_t v) { varint(zigzag(v)); }
  std::vector<uint8_t> take() { return std::move(out_); }

  // ---- the frame (ProgramFields.h); writing never fails ----
  bool magic() {
    for (char c : kMagic)
      byte(uint8_t(c));
    return true;
  }
  bool version() {
    varint(uint64_t(version_));
    return true;
  }
  bool text(const std::string &s, const char *) {
    varint(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
    return true;
  }
  template <typename T>
  bool integer(T v, const char *) {
    signedVarint(int64_t(v));
    return true;
  }
  template <typename T>
  bool unsignedInteger(T v, const char *) {
    varint(uint64_t(v));
    return true;
  }
  bool flags(bool hasStreams, const std::vector<int32_t> &sizes) {
    varint((hasStreams ? kFlagStreams : 0) | (sizes.empty() ? 0 : kFlagSizes));
    return true;
  }
  // Lists whose length was written before (as a count): what is there is written.
  template <typename List>
  bool sized(const List &, int64_t, size_t, const std::string &, const std::string &) {
    return true;
  }
  template <typename List>
  bool list(const List &list, const char *, size_t) {
    varint(list.size());
    return true;
  }
  bool ids(const std::vector<uint32_t> &ids, const char *) {
    varint(ids.size());
    int64_t previous = -1;
    for (uint32_t id : ids) {
      signedVarint(int64_t(id) - (previous + 1));
      previous = id;
    }
    return true;
  }
  template <typename T>
  bool pairs(const std::vector<T> &first, const std::vector<T> &second, const char *, const char *,
             const char *) {
    varint(first.size());
    for (size_t i = 0; i < first.size(); ++i) {
      signedVarint(first[i]);
      signedVarint(i < second.size() ? second[i] : 0);
    }
    return true;
  }
  template <class Table>
  bool entries(const std::vector<typename Table::Entry> &entries) {
    varint(entries.size());
    typename Table::Predictor predict;
    for (const typename Table::Entry &entry : entries) {
      EntryWriter out;
      Table::fields(out, entry, predict);
      byte(out.head);
      for (int i = 0; i < out.numDeltas; ++i)
        signedVarint(out.deltas[i]);
      predict.saw(entry);
    }
    return true;
  }
  bool end() { return true; }

private:
  // One entry: the lead byte, then the deltas of the fields that differ from
  // their guesses. Values past a lead field's width do not fit: pipec writes
  // only valid kinds and flags.
  struct EntryWriter {
    uint8_t head = 0;
    int64_t deltas[8];
    int numDeltas = 0;
    template <typename F>
    bool lead(const F &field, int bit, int width, int, const char *, Name, int highBit = -1) {
      head |= uint8_t((unsigned(field) & ((1u << width) - 1)) << bit);
      if (highBit >= 0)
        head |= uint8_t(((unsigned(field) >> width) & 1u) << highBit);
      return true;
    }
    template <typename F>
    bool guessed(const F &field, int64_t guess, int flagBit, const char *) {
      int64_t d = int64_t(field) - guess;
      if (d != 0) {
        head |= uint8_t(1u << flagBit);
        deltas[numDeltas++] = d;
      }
      return true;
    }
  };

  int version_;
  std::vector<uint8_t> out_;
};

// ---- decoding ----

// What of an entry format 5 cannot hold (format 6 adds the transfers), or "".
std::string transferIn(const ProgramOp &op) {
  return isTransfer(op.kind) ? std::string("kind ") + opCodeName(op.kind) + " (" +
                                   std::to_string(int(op.kind)) + ")"
                             : "";
}
std::string transferIn(const ProgramMessage &m) {
  return m.gradient > kGradientMessage ? "kind " + std::to_string(int(m.gradient)) : "";
}
std::string transferIn(const StreamCommand &) { return ""; }

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

  // ---- the frame (ProgramFields.h) ----
  bool version() {
    uint64_t version;
    if (!varint(version, "the format version"))
      return false;
    if (version != uint64_t(kProgramFormatVersion) && version != uint64_t(kProgramFormatTransfers))
      return fail(4, "the data is in program format " + std::to_string(version) +
                         ", this runtime reads format " + std::to_string(kProgramFormatVersion) +
                         ": re-emit it with a matching pipec (it reads format " +
                         std::to_string(kProgramFormatTransfers) +
                         " too, for programs with BPipe's transfers)");
    version_ = int(version);
    return true;
  }
  template <typename T>
  bool integer(T &out, const char *what) { return signedValue(out, what); }
  template <typename T>
  bool unsignedInteger(T &out, const char *what) { return unsignedValue(out, what); }
  // The sizes come last; here a size-1 list marks them as present.
  bool flags(bool &hasStreams, std::vector<int32_t> &sizes) {
    uint64_t flags;
    if (!varint(flags, "the flags"))
      return false;
    if (flags & ~(kFlagStreams | kFlagSizes))
      return fail(pos_ - 1, "unknown flags " + std::to_string(flags));
    hasStreams = flags & kFlagStreams;
    sizes.assign(flags & kFlagSizes ? 1 : 0, 0);
    return true;
  }
  // `n` entries, each at least `bytesPerEntry` long (0: not checked).
  template <typename List>
  bool sized(List &list, int64_t n, size_t bytesPerEntry, const std::string &what,
             const std::string &problem) {
    if (bytesPerEntry && (n < 0 || uint64_t(n) > left() / bytesPerEntry))
      return fail(pos_, what.empty() ? problem : what + " " + std::to_string(n) + " " + problem);
    list.resize(size_t(n));
    return true;
  }
  template <typename List>
  bool list(List &list, const char *what, size_t bytesPerEntry) {
    size_t n;
    if (!count(n, what, bytesPerEntry))
      return false;
    list.resize(n);
    return true;
  }
  // Ids go up by one at a time, mostly: each is coded against the one before plus one.
  bool ids(std::vector<uint32_t> &ids, const char *what) {
    if (!list(ids, what, 1))
      return false;
    int64_t previous = -1;
    for (uint32_t &id : ids) {
      if (!delta(id, previous + 1, "a message id"))
        return false;
      previous = id;
    }
    return true;
  }
  template <typename T>
  bool pairs(std::vector<T> &first, std::vector<T> &second, const char *countWhat,
             const char *firstWhat, const char *secondWhat) {
    if (!list(first, countWhat, 2))
      return false;
    second.resize(first.size());
    for (size_t i = 0; i < first.size(); ++i)
      if (!signedValue(first[i], firstWhat) || !signedValue(second[i], secondWhat))
        return false;
    return true;
  }
  template <class Table>
  bool entries(std::vector<typename Table::Entry> &entries) {
    if (!list(entries, Table::kCount, 1))
      return false;
    typename Table::Predictor predict;
    for (typename Table::Entry &entry : entries) {
      EntryReader in{*this, 0, Table::kEntry};
      size_t at = pos_;
      if (!byte(in.head, Table::kEntry))
        return false;
      // Format 6 widens the kinds into bit 7 (ProgramFields.h).
      int leadBits = version_ >= kProgramFormatTransfers ? 8 : Table::kLeadBits;
      if (leadBits < 8 && (in.head >> leadBits))
        return fail(pos_ - 1, std::string(Table::kEntry) + "'s lead byte has unused bits set");
      if (!Table::fields(in, entry, predict))
        return false;
      if (version_ < kProgramFormatTransfers) {
        std::string transfer = transferIn(entry);
        if (!transfer.empty())
          return fail(at, std::string(Table::kEntry) + " of program format " +
                              std::to_string(version_) + " has " + transfer +
                              ", a BPipe transfer, which needs format " +
                              std::to_string(kProgramFormatTransfers));
      }
      predict.saw(entry);
    }
    return true;
  }
  bool end() {
    return atEnd() || fail(pos_, std::to_string(left()) + " bytes follow the tables");
  }

  // One entry's fields, after its lead byte.
  struct EntryReader {
    Reader &in;
    uint8_t head;
    const char *entry;
    template <typename F>
    bool lead(F &field, int bit, int width, int limit, const char *what, Name, int highBit = -1) {
      unsigned value = (head >> bit) & ((1u << width) - 1);
      if (highBit >= 0)
        value |= ((head >> highBit) & 1u) << width;
      if (value >= unsigned(limit))
        return in.fail(in.pos_ - 1, std::string(entry) + "'s lead byte names no " + what + " (" +
                                        std::to_string(value) + ")");
      field = F(value);
      return true;
    }
    template <typename F>
    bool guessed(F &field, int64_t guess, int flagBit, const char *what) {
      return in.predicted(field, guess, head & (1u << flagBit), what);
    }
  };


private:
  const uint8_t *bytes_;
  size_t size_;
  size_t pos_ = 0;
  int version_ = kProgramFormatVersion;
  std::string error_;
};

// ---- comparison: every field of the frame and the tables, flattened ----

class Flattener {
public:
  std::vector<int64_t> numbers;
  std::vector<std::string> texts;

  bool magic() { return true; }
  bool version() { return true; }
  bool text(const std::string &s, const char *) {
    texts.push_back(s);
    return true;
  }
  template <typename T>
  bool integer(T v, const char *) {
    numbers.push_back(int64_t(v));
    return true;
  }
  template <typename T>
  bool unsignedInteger(T v, const char *) { return integer(v, nullptr); }
  bool flags(bool hasStreams, const std::vector<int32_t> &sizes) {
    return integer(hasStreams, nullptr) && integer(sizes.empty(), nullptr);
  }
  template <typename List>
  bool sized(const List &list, int64_t, size_t, const std::string &, const std::string &) {
    return integer(list.size(), nullptr);
  }
  template <typename List>
  bool list(const List &list, const char *, size_t) { return integer(list.size(), nullptr); }
  bool ids(const std::vector<uint32_t> &ids, const char *) {
    integer(ids.size(), nullptr);
    numbers.insert(numbers.end(), ids.begin(), ids.end());
    return true;
  }
  template <typename T>
  bool pairs(const std::vector<T> &first, const std::vector<T> &second, const char *, const char *,
             const char *) {
    integer(first.size(), nullptr);
    integer(second.size(), nullptr);
    numbers.insert(numbers.end(), first.begin(), first.end());
    numbers.insert(numbers.end(), second.begin(), second.end());
    return true;
  }
  template <class Table>
  bool entries(const std::vector<typename Table::Entry> &entries) {
    integer(entries.size(), nullptr);
    typename Table::Predictor none; // guesses are the codec's business, not a field
    for (const typename Table::Entry &entry : entries)
      Table::fields(*this, entry, none);
    return true;
  }
  bool end() { return true; }

  template <typename F>
  bool lead(const F &field, int, int, int, const char *, Name, int = -1) {
    return integer(field, nullptr);
  }
  template <typename F>
  bool guessed(const F &field, int64_t, int, const char *) { return integer(field, nullptr); }
};

Flattener flatten(const ProgramData &d) {
  Flattener f;
  frame(f, d);
  // Lists the frame does not visit (stream programs of data without streams) count too.
  f.integer(d.streams.size(), nullptr);
  return f;
}

} // namespace
} // namespace codec

using namespace codec;

bool operator==(const ProgramData &a, const ProgramData &b) {
  Flattener x = flatten(a), y = flatten(b);
  return x.numbers == y.numbers && x.texts == y.texts;
}

// Format 6 only for programs with BPipe's transfers (ProgramFormat.h): every
// other program keeps format 5's bytes.
int formatVersionOf(const ProgramData &d) {
  for (const ProgramData::Rank &rank : d.ranks)
    for (const ProgramOp &op : rank.ops)
      if (isTransfer(op.kind))
        return kProgramFormatTransfers;
  for (const ProgramMessage &m : d.messages)
    if (m.gradient > kGradientMessage)
      return kProgramFormatTransfers;
  return kProgramFormatVersion;
}

std::vector<uint8_t> encodeProgram(const ProgramData &d) {
  Writer w(formatVersionOf(d));
  frame(w, d);
  return w.take();
}

std::string decodeProgram(const uint8_t *bytes, size_t size, ProgramData &data) {
  data = ProgramData();
  Reader in(bytes, size);
  if (!frame(in, data)) {
    data = ProgramData();
    return in.error();
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

} // namespace pipert
