// dumpProgram (pipert/ProgramEncoding.h): the decoded tables as text, for a
// built program's --dump-program. Each entry is written by visiting the one
// description of its fields (ProgramFields.h), so the dump shows the fields
// the codec codes, in its order.
#include "ProgramFields.h"

#include <string>

namespace pipert {

namespace {

using namespace codec;

// One entry as "{F,0,0,1,3},": each field's value, or its name where it has one.
class EntryText {
public:
  explicit EntryText(std::string &out) : out_(out) {}
  template <class Table>
  void write(const typename Table::Entry &entry) {
    static const typename Table::Predictor kNoGuess; // guesses are the codec's, not a field
    first_ = true;
    out_ += '{';
    Table::fields(*this, entry, kNoGuess);
    out_ += "},";
  }
  template <typename F>
  bool lead(const F &field, int, int, int, const char *, Name name, int = -1) {
    return value(name ? std::string(name(unsigned(field))) : std::to_string(unsigned(field)));
  }
  template <typename F>
  bool guessed(const F &field, int64_t, int, const char *) {
    return value(std::to_string(field));
  }

private:
  bool value(const std::string &text) {
    if (!first_)
      out_ += ',';
    first_ = false;
    out_ += text;
    return true;
  }
  std::string &out_;
  bool first_ = true;
};

// A table's entries `perLine` to a line, each line led by its first index.
template <class Table>
void rows(std::string &out, const std::string &title,
          const std::vector<typename Table::Entry> &entries, size_t perLine) {
  out += title + "[" + std::to_string(entries.size()) + "]:";
  EntryText text(out);
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i % perLine == 0)
      out += "\n    /* " + std::to_string(i) + " */";
    out += ' ';
    text.write<Table>(entries[i]);
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
    rows<OpTable>(out, prefix + "Ops", rank.ops, 6);
    out += idList(prefix + "Sends", rank.sends);
    out += idList(prefix + "Receives", rank.receives);
  }
  rows<MessageTable>(out, "kMessages", d.messages, 4);
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
  if (!d.microbatchSizes.empty()) {
    out += "kMicrobatchSizes[" + std::to_string(d.microbatchSizes.size()) + "]:";
    for (int32_t size : d.microbatchSizes)
      out += " " + std::to_string(size);
    out += "\n";
  }
  for (size_t r = 0; r < d.streams.size(); ++r) {
    const ProgramData::Streams &s = d.streams[r];
    out += "kRank" + std::to_string(r) + "Streams: " + std::to_string(s.numStreams) + " streams, " +
           std::to_string(s.numEvents) + " events\n";
    rows<CommandTable>(out, "kRank" + std::to_string(r) + "Commands", s.commands, 4);
  }
  return out;
}

} // namespace pipert
