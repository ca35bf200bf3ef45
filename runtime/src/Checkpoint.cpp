// Checkpoint files (see Checkpoint.h).
#include "pipert/Checkpoint.h"

#include "pipert/RegularFile.h"

#include <cstring>
#include <fstream>
#include <sys/stat.h>

namespace pipert {

namespace {

constexpr char kMagic[8] = {'P', 'I', 'P', 'E', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 4096; // magic to identity, with room to spare

uint64_t fnv1a(const std::string &bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

class Writer {
public:
  template <typename V> void put(V v) { out.append(reinterpret_cast<const char *>(&v), sizeof v); }
  void text(const std::string &s) {
    put(uint32_t(s.size()));
    out += s;
  }
  template <typename T> void tensor(const Tensor<T> &t) {
    out.append(reinterpret_cast<const char *>(t.data()), t.size() * sizeof(T));
  }
  std::string out;
};

class Reader {
public:
  Reader(const std::string &bytes, std::string file) : bytes_(bytes), file_(std::move(file)) {}
  template <typename V> V get() {
    V v;
    need(sizeof v);
    std::memcpy(&v, bytes_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string text() {
    uint32_t n = get<uint32_t>();
    need(n);
    std::string s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }
  template <typename T> void tensor(Tensor<T> &t) {
    need(t.size() * sizeof(T));
    std::memcpy(t.data(), bytes_.data() + at_, t.size() * sizeof(T));
    at_ += t.size() * sizeof(T);
  }
  bool atEnd() const { return at_ == bytes_.size(); }
  [[noreturn]] void fail(const std::string &what) const {
    throw CheckpointError("checkpoint " + file_ + ": " + what);
  }

private:
  void need(size_t n) const {
    if (bytes_.size() - at_ < n)
      fail("truncated");
  }
  const std::string &bytes_;
  std::string file_;
  size_t at_ = 0;
};

// The header: magic, version, element size, steps (range-checked) and
// identity, each checked against this run. Returns the steps taken.
template <typename T>
int64_t readHeader(Reader &r, const std::string &identity) {
  for (size_t i = 0; i < sizeof kMagic; ++i)
    if (r.get<char>() != kMagic[i])
      r.fail("not a pipert checkpoint");
  if (uint32_t version = r.get<uint32_t>(); version != kVersion)
    r.fail("version " + std::to_string(version) + ", this program reads " + std::to_string(kVersion));
  if (uint32_t bytesPer = r.get<uint32_t>(); bytesPer != 4 && bytesPer != 8)
    r.fail("its element size " + std::to_string(bytesPer) + " is neither 4 (fp32) nor 8 (fp64)");
  else if (bytesPer != sizeof(T))
    r.fail(std::string("written by an ") + (bytesPer == 4 ? "fp32" : "fp64") + " run, this run is " +
           (sizeof(T) == 4 ? "fp32" : "fp64"));
  int64_t steps = r.get<int64_t>();
  if (steps < 0 || steps > kMaxCheckpointSteps)
    r.fail("its step count " + std::to_string(steps) + " is out of range (0 to " +
           std::to_string(kMaxCheckpointSteps) + ")");
  if (std::string theirs = r.text(); theirs != identity)
    r.fail("written for " + theirs + "; this run is " + identity);
  return steps;
}

// The most bytes a checkpoint of these copies can take (each parameter with
// both optimizer moments): what --load reads at most.
template <typename T>
uint64_t largestCheckpoint(const std::string &identity, const std::vector<Stage<T> *> &copies) {
  uint64_t bytes = sizeof kMagic + 4 + 4 + 8 + 4 + identity.size() + 4 + 8;
  for (Stage<T> *copy : copies) {
    bytes += 4 + 4;
    for (const Parameter<T> &p : copy->parameters())
      bytes += 4 + p.name.size() + 8 + 8 + 1 + 1 + 3 * uint64_t(p.value->size()) * sizeof(T);
  }
  return bytes + 4096; // another run's identity may be longer (each is under 512 bytes)
}

} // namespace

std::string checkpointFile(const std::string &dir) { return dir + "/checkpoint.bin"; }

template <typename T>
void saveCheckpoint(const std::string &dir, const std::string &identity, int64_t steps,
                    const std::vector<Stage<T> *> &copies,
                    const std::vector<StageOptimizerState<T> *> &states) {
  Writer w;
  w.out.append(kMagic, sizeof kMagic);
  w.put(kVersion);
  w.put(uint32_t(sizeof(T)));
  w.put(int64_t(steps));
  w.text(identity);
  w.put(uint32_t(copies.size()));
  for (size_t c = 0; c < copies.size(); ++c) {
    std::vector<Parameter<T>> params = copies[c]->parameters();
    w.put(int32_t(copies[c]->stageIndex()));
    w.put(uint32_t(params.size()));
    for (size_t p = 0; p < params.size(); ++p) {
      const Tensor<T> &v = *params[p].value;
      const ParameterState<T> *s =
          p < states[c]->parameters.size() ? &states[c]->parameters[p] : nullptr;
      bool first = s && !s->first.empty(), second = s && !s->second.empty();
      w.text(params[p].name);
      w.put(uint64_t(v.rows()));
      w.put(uint64_t(v.cols()));
      w.put(uint8_t(first));
      w.put(uint8_t(second));
      w.tensor(v);
      if (first)
        w.tensor(s->first);
      if (second)
        w.tensor(s->second);
    }
  }
  w.put(fnv1a(w.out));
  ::mkdir(dir.c_str(), 0777); // an existing directory is fine; a failure shows at open
  std::string file = checkpointFile(dir), temporary = file + ".partial";
  if (std::string problem = writeFileReplacing(file, temporary, w.out); !problem.empty())
    throw CheckpointError("cannot write checkpoint (--save " + dir + "): " + problem);
}

template <typename T>
int64_t loadCheckpoint(const std::string &dir, const std::string &identity,
                       const std::vector<Stage<T> *> &copies,
                       const std::vector<StageOptimizerState<T> *> &states) {
  std::string file = checkpointFile(dir);
  FileRead read = readRegularFile(file, largestCheckpoint(identity, copies));
  if (read.tooLarge) {
    // Larger than any checkpoint of this run: say whose it is, when its
    // header tells (another model's checkpoint is larger), else the size.
    FileRead head = readRegularFile(file, kHeaderBytes, true);
    Reader r(head.bytes, file);
    readHeader<T>(r, identity);
  }
  if (!read.ok)
    throw CheckpointError("cannot read checkpoint " + file + " (--load " + dir + "): " + read.problem);
  const std::string &bytes = read.bytes;
  if (bytes.size() < sizeof kMagic + sizeof(uint64_t) || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw CheckpointError("checkpoint " + file + ": not a pipert checkpoint");
  std::string body = bytes.substr(0, bytes.size() - sizeof(uint64_t));
  uint64_t sum;
  std::memcpy(&sum, bytes.data() + body.size(), sizeof sum);
  if (sum != fnv1a(body))
    throw CheckpointError("checkpoint " + file + ": checksum mismatch (corrupt or truncated)");
  Reader r(body, file);
  int64_t steps = readHeader<T>(r, identity);
  if (uint32_t n = r.get<uint32_t>(); n != copies.size())
    r.fail("holds " + std::to_string(n) + " stage copies, this run has " + std::to_string(copies.size()));
  for (size_t c = 0; c < copies.size(); ++c) {
    std::vector<Parameter<T>> params = copies[c]->parameters();
    if (int32_t s = r.get<int32_t>(); s != copies[c]->stageIndex())
      r.fail("copy " + std::to_string(c) + " is of stage " + std::to_string(s) + ", expected stage " +
             std::to_string(copies[c]->stageIndex()));
    if (uint32_t n = r.get<uint32_t>(); n != params.size())
      r.fail("stage " + std::to_string(copies[c]->stageIndex()) + " has " + std::to_string(n) +
             " parameters, expected " + std::to_string(params.size()));
    StageOptimizerState<T> &state = *states[c];
    state.parameters.assign(params.size(), {});
    bool anyState = false;
    for (size_t p = 0; p < params.size(); ++p) {
      Tensor<T> &v = *params[p].value;
      std::string name = r.text();
      uint64_t rows = r.get<uint64_t>(), cols = r.get<uint64_t>();
      if (name != params[p].name || rows != v.rows() || cols != v.cols())
        r.fail("stage " + std::to_string(copies[c]->stageIndex()) + " parameter " + name + " " +
               std::to_string(rows) + "x" + std::to_string(cols) + ", expected " + params[p].name +
               " " + v.shapeString());
      uint8_t first = r.get<uint8_t>(), second = r.get<uint8_t>();
      if (first > 1 || second > 1)
        r.fail("stage " + std::to_string(copies[c]->stageIndex()) + " parameter " + name +
               ": optimizer-state flags " + std::to_string(first) + ", " + std::to_string(second) +
               " are not 0 or 1");
      r.tensor(v);
      if (first) {
        state.parameters[p].first.reset(v.rows(), v.cols());
        r.tensor(state.parameters[p].first);
      }
      if (second) {
        state.parameters[p].second.reset(v.rows(), v.cols());
        r.tensor(state.parameters[p].second);
      }
      anyState |= first || second;
    }
    if (!anyState)
      state.parameters.clear(); // plain SGD keeps none: sized on the first step
  }
  if (!r.atEnd())
    r.fail("trailing bytes after the last stage");
  return steps;
}

template void saveCheckpoint<float>(const std::string &, const std::string &, int64_t,
                                    const std::vector<Stage<float> *> &,
                                    const std::vector<StageOptimizerState<float> *> &);
template void saveCheckpoint<double>(const std::string &, const std::string &, int64_t,
                                     const std::vector<Stage<double> *> &,
                                     const std::vector<StageOptimizerState<double> *> &);
template int64_t loadCheckpoint<float>(const std::string &, const std::string &,
                                       const std::vector<Stage<float> *> &,
                                       const std::vector<StageOptimizerState<float> *> &);
template int64_t loadCheckpoint<double>(const std::string &, const std::string &,
                                        const std::vector<Stage<double> *> &,
                                        const std::vector<StageOptimizerState<double> *> &);

} // namespace pipert
