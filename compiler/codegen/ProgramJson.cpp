// The JSON program export (codegen/ProgramJson.h). One line per op and per
// message, keys in a fixed order, so a diff of two exports reads like a diff of
// two schedules and golden tests can pin single ops.
#include "codegen/ProgramJson.h"

#include "PipecVersion.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cassert>
#include <set>
#include <utility>
#include <vector>

namespace pipec {

namespace {

// A JSON string, escaped (and made valid UTF-8: a file name may hold anything).
std::string quoted(const std::string &text) {
  std::string out;
  llvm::raw_string_ostream stream(out);
  stream << llvm::json::Value(llvm::json::isUTF8(text) ? text : llvm::json::fixUTF8(text));
  return stream.str();
}

const char *opName(OpKind kind) {
  switch (kind) {
  case OpKind::F: return "F";
  case OpKind::B: return "B";
  case OpKind::I: return "I";
  case OpKind::W: return "W";
  case OpKind::R: return "R";
  default: return ast::opKindName(kind); // memory ops: "Offload", ..., "Load"
  }
}

const char *messageKindName(MessageKind kind) {
  switch (kind) {
  case MessageKind::Activation: return "activation";
  case MessageKind::Gradient: return "gradient";
  case MessageKind::Evicted: return "evicted";
  case MessageKind::Returned: return "returned";
  }
  return "activation";
}

// F stores its stage's activations for its micro-batch; a whole backward frees
// them, and after a split one the W does; a replay (R) stores them again (its
// F dropped them right after running); an Offload, Evict or Return takes them
// off the rank and a Reload, Load or Hold puts them on (check/Memory.cpp, the
// same rule).
int liveDelta(OpKind kind) { return int(activationDelta(kind)); }

// Whether the program needs a reader of version 2: one that runs replays (R)
// and micro-batches of declared sizes. Other programs stay version 1, which
// every reader reads alike (a reader that does not run memory ops refuses them
// by name).
bool needsVersion2(const ScheduleIR &ir) {
  if (!ir.microbatchSizes.empty())
    return true;
  for (const RankOps &rank : ir.ranks)
    for (const Op &op : rank.ops)
      if (op.kind == OpKind::R)
        return true;
  return false;
}

void writeIds(const std::vector<uint32_t> &ids, llvm::raw_ostream &out) {
  out << '[';
  for (size_t i = 0; i < ids.size(); ++i)
    out << (i ? ", " : "") << ids[i];
  out << ']';
}

// Which copy of its stage each (rank, chunk) slot holds: the order of the
// stage's sync group (flow order), 0 for a stage held once.
using SlotKey = std::pair<int32_t, int32_t>;
struct SlotInfo {
  int32_t stage, copy;
};

std::vector<std::pair<SlotKey, SlotInfo>> slotTable(const ScheduleIR &ir,
                                                    const CheckReport &report) {
  llvm::DenseMap<SlotKey, SlotInfo> slots;
  for (const Flow &flow : ir.flows)
    for (size_t s = 0; s < flow.stageSlots.size(); ++s)
      slots.try_emplace({flow.stageSlots[s].rank, flow.stageSlots[s].chunk},
                        SlotInfo{int32_t(s), 0});
  for (const SyncGroup &group : report.syncGroups)
    for (size_t c = 0; c < group.slots.size(); ++c)
      slots[{group.slots[c].rank, group.slots[c].chunk}] = {group.stage, int32_t(c)};
  std::vector<std::pair<SlotKey, SlotInfo>> sorted(slots.begin(), slots.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  return sorted;
}

void writeHeader(const ScheduleIR &ir, const std::string &sourcePath, llvm::raw_ostream &out) {
  out << "{\n"
      << "  \"format\": \"pipec-program\",\n"
      << "  \"version\": " << (needsVersion2(ir) ? kProgramJsonVersion : 1) << ",\n"
      << "  \"pipec\": " << quoted(PIPEC_VERSION) << ",\n"
      << "  \"source\": " << quoted(sourcePath) << ",\n"
      << "  \"schedule\": " << quoted(ir.name) << ",\n"
      << "  \"parameters\": {";
  for (size_t i = 0; i < ir.params.size(); ++i)
    out << (i ? ", " : "") << quoted(ir.params[i].first) << ": " << ir.params[i].second;
  out << "},\n"
      << "  \"ranks\": " << ir.numRanks << ",\n"
      << "  \"stages\": " << ir.numStages << ",\n"
      << "  \"microbatches\": " << ir.numMicrobatches << ",\n"
      << "  \"copies\": " << ir.copies << ",\n";
  if (!ir.microbatchSizes.empty()) { // `sizes`: activations and samples scale with them
    out << "  \"microbatch_sizes\": [";
    for (size_t i = 0; i < ir.microbatchSizes.size(); ++i)
      out << (i ? ", " : "") << ir.microbatchSizes[i];
    out << "],\n";
  }
}

void writeFlows(const ScheduleIR &ir, llvm::raw_ostream &out) {
  out << "  \"flows\": [";
  for (size_t f = 0; f < ir.flows.size(); ++f) {
    const Flow &flow = ir.flows[f];
    out << (f ? ",\n" : "\n") << "    {\"name\": " << quoted(flow.name) << ", \"microbatches\": ["
        << flow.begin << ", " << flow.end << "], \"slots\": [";
    for (size_t s = 0; s < flow.stageSlots.size(); ++s)
      out << (s ? ", " : "") << '[' << flow.stageSlots[s].rank << ", "
          << flow.stageSlots[s].chunk << ']';
    out << "]}";
  }
  out << "\n  ],\n";
}

// Stage -> its copies' slots, copy 0 first; and the ranks that compute losses
// (those holding a flow's last stage), ascending.
void writeStagesAndLosses(const ScheduleIR &ir,
                          const std::vector<std::pair<SlotKey, SlotInfo>> &slots,
                          llvm::raw_ostream &out) {
  std::vector<std::vector<SlotKey>> copies(size_t(ir.numStages));
  for (const auto &[key, info] : slots) {
    auto &list = copies[size_t(info.stage)];
    if (list.size() <= size_t(info.copy))
      list.resize(size_t(info.copy) + 1);
    list[size_t(info.copy)] = key;
  }
  out << "  \"stage_copies\": [";
  for (size_t s = 0; s < copies.size(); ++s) {
    out << (s ? ",\n" : "\n") << "    [";
    for (size_t c = 0; c < copies[s].size(); ++c)
      out << (c ? ", " : "") << "{\"rank\": " << copies[s][c].first
          << ", \"chunk\": " << copies[s][c].second << '}';
    out << ']';
  }
  out << "\n  ],\n";
  std::vector<int32_t> lossRanks;
  for (const Flow &flow : ir.flows)
    if (!flow.stageSlots.empty())
      lossRanks.push_back(flow.stageSlots.back().rank);
  std::sort(lossRanks.begin(), lossRanks.end());
  lossRanks.erase(std::unique(lossRanks.begin(), lossRanks.end()), lossRanks.end());
  out << "  \"loss_ranks\": [";
  for (size_t i = 0; i < lossRanks.size(); ++i)
    out << (i ? ", " : "") << lossRanks[i];
  out << "],\n";
}

void writeMessages(const ScheduleIR &ir, const CommPlan &comm, llvm::raw_ostream &out) {
  out << "  \"messages\": [";
  for (size_t id = 0; id < comm.messages.size(); ++id) {
    const Message &m = comm.messages[id];
    const Op &producer = comm.producerOp(ir, m);
    out << (id ? ",\n" : "\n") << "    {\"id\": " << id << ", \"kind\": \""
        << messageKindName(m.kind)
        << "\", \"from\": " << comm.from(m) << ", \"to\": " << comm.to(m)
        << ", \"channel\": " << m.channel << ", \"stage\": " << producer.stage
        << ", \"mb\": " << producer.microbatch << ", \"producer_op\": " << m.producer
        << ", \"consumer_op\": " << m.consumer << '}';
  }
  out << (comm.messages.empty() ? "],\n" : "\n  ],\n");
}

void writeRank(const ScheduleIR &ir, const CheckReport &report,
               const std::vector<std::pair<SlotKey, SlotInfo>> &slots, size_t r,
               llvm::raw_ostream &out) {
  const CommPlan &comm = *report.comm;
  const RankComm &rankComm = comm.ranks[r];
  const std::vector<Op> &ops = ir.ranks[r].ops;
  // Per op: the messages it sends and the ones it needs.
  std::vector<std::vector<uint32_t>> sends(ops.size()), needs(ops.size());
  for (uint32_t id : rankComm.sends)
    sends[comm.messages[id].producer].push_back(id);
  for (uint32_t id : rankComm.receives)
    needs[comm.messages[id].consumer].push_back(id);
  for (auto &list : needs)
    std::sort(list.begin(), list.end());
  // Step of each op: steps start at stepOp[k].
  std::vector<uint32_t> stepOf(ops.size(), 0);
  for (size_t k = 0; k < rankComm.stepOp.size(); ++k) {
    uint32_t end = k + 1 < rankComm.stepOp.size() ? rankComm.stepOp[k + 1] : uint32_t(ops.size());
    for (uint32_t i = rankComm.stepOp[k]; i < end; ++i)
      stepOf[i] = uint32_t(k);
  }
  // A partner's Hold and Return name the owner's slot (peer rank, chunk).
  const RankOps &rankOps = ir.ranks[r];
  auto copyOf = [&](const Op &op, uint32_t index) {
    int32_t holder = isPartnerOp(op.kind) ? rankOps.peerOf(index) : int32_t(r);
    auto it = std::lower_bound(slots.begin(), slots.end(), SlotKey{holder, op.chunk},
                               [](const auto &entry, const SlotKey &key) { return entry.first < key; });
    assert(it != slots.end() && it->first == SlotKey(holder, op.chunk));
    return it->second.copy;
  };

  const RankMemory &memory = report.memory[r];
  out << "    {\"rank\": " << r << ", \"peak_activations\": " << memory.peakActivations
      << ", \"peak_held_messages\": " << memory.peakHeldMessages << ",\n"
      << "     \"slots\": [";
  bool first = true;
  for (const auto &[key, info] : slots)
    if (key.first == int32_t(r)) {
      out << (first ? "" : ", ") << "{\"chunk\": " << key.second << ", \"stage\": " << info.stage
          << ", \"copy\": " << info.copy << '}';
      first = false;
    }
  out << "],\n     \"ops\": [";
  // (stage, micro-batch) pairs this rank replays: their F keeps nothing after it.
  std::set<std::pair<int32_t, int32_t>> replayed;
  for (const Op &op : ops)
    if (op.kind == OpKind::R)
      replayed.insert({op.stage, op.microbatch});
  auto sizeOf = [&](const Op &op) -> int64_t {
    return ir.microbatchSizes.empty() ? 1 : ir.microbatchSizes[size_t(op.microbatch)];
  };
  int64_t live = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op &op = ops[i];
    live += liveDelta(op.kind) * sizeOf(op);
    bool dropped = op.kind == OpKind::F && replayed.count({op.stage, op.microbatch});
    if (dropped) // counted while it ran (the peak), gone after it (check/Memory.cpp)
      live -= sizeOf(op);
    const char *pair = op.pair == PairRole::First ? "\"first\"" : op.pair == PairRole::Second ? "\"second\"" : "null";
    out << (i ? ",\n" : "\n") << "      {\"kind\": \"" << opName(op.kind) << "\", \"stage\": "
        << op.stage << ", \"chunk\": " << op.chunk << ", \"copy\": " << copyOf(op, uint32_t(i))
        << ", \"mb\": " << op.microbatch << ", \"step\": " << stepOf[i] << ", \"pair\": " << pair
        << ", \"frees\": " << (liveDelta(op.kind) < 0 ? "true" : "false")
        << (dropped ? ", \"recomputed\": true" : "") << ", \"live\": " << live
        << ", \"needs\": ";
    writeIds(needs[i], out);
    out << ", \"sends\": ";
    writeIds(sends[i], out);
    if (isMemoryOp(op.kind)) { // fields only memory ops have: older goldens keep their lines
      out << ", \"stream\": \"copy\"";
      if (isTransferOp(op.kind))
        out << ", \"peer\": " << rankOps.peerOf(uint32_t(i));
    }
    out << '}';
  }
  out << (ops.empty() ? "],\n" : "\n     ],\n") << "     \"send_order\": ";
  writeIds(std::vector<uint32_t>(rankComm.sends.begin(), rankComm.sends.end()), out);
  out << ",\n     \"receive_order\": ";
  writeIds(rankComm.receives, out);
  out << "}";
}

} // namespace

void writeProgramJson(const ScheduleIR &ir, const CheckReport &report,
                      const std::string &sourcePath, llvm::raw_ostream &out) {
  assert(report.ok && report.comm && "emit only schedules whose checks passed");
  assert(report.memory.size() == ir.ranks.size());
  std::vector<std::pair<SlotKey, SlotInfo>> slots = slotTable(ir, report);
  writeHeader(ir, sourcePath, out);
  writeFlows(ir, out);
  writeStagesAndLosses(ir, slots, out);
  writeMessages(ir, *report.comm, out);
  out << "  \"programs\": [";
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    out << (r ? ",\n" : "\n");
    writeRank(ir, report, slots, r, out);
  }
  out << "\n  ]\n}\n";
}

} // namespace pipec
