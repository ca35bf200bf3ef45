// Table validation (pipert/ProgramValidation.h) on hand-made tables: a correct
// 2-rank 1F1B with its stream program passes, and each broken copy is refused
// with the table and entry named, before anything runs.
#include "pipert/ProgramValidation.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace pipert;
using Catch::Matchers::Contains;

namespace {

constexpr OpCode F = OpCode::F, B = OpCode::B;
constexpr StreamCmd Run = StreamCmd::Run, Send = StreamCmd::Send, Receive = StreamCmd::Receive,
                    RecordEvent = StreamCmd::RecordEvent, WaitEvent = StreamCmd::WaitEvent;
constexpr RunPart All = RunPart::Whole;

// 1F1B, P = 2, M = 2. Rank 0: F0 F1 B0 B1; rank 1: F0 B0 F1 B1. Streams 2 and 3
// of each rank are its two channels (rank 0 sends activations on 2, receives
// gradients on 3; rank 1 the other way round).
struct Tables {
  std::vector<ProgramOp> ops[2] = {
      {{F, 0, 0, 0, 0}, {F, 0, 0, 0, 1}, {B, 0, 0, 0, 0}, {B, 0, 0, 0, 1}},
      {{F, 0, 0, 1, 0}, {B, 0, 0, 1, 0}, {F, 0, 0, 1, 1}, {B, 0, 0, 1, 1}}};
  std::vector<ProgramMessage> messages = {
      {0, 0, 1, 0, 0, 0, 0}, {0, 0, 1, 0, 1, 1, 2}, {1, 1, 0, 1, 0, 1, 2}, {1, 1, 0, 1, 1, 3, 3}};
  std::vector<uint32_t> sends[2] = {{0, 1}, {2, 3}}, receives[2] = {{2, 3}, {0, 1}};
  std::vector<int64_t> peaks = {2, 1};
  std::vector<StreamCommand> commands[2] = {
      {{Run, All, 0, 0}, {RecordEvent, All, 0, 0}, {WaitEvent, All, 2, 0}, {Send, All, 2, 0},
       {Run, All, 0, 1}, {RecordEvent, All, 0, 1}, {WaitEvent, All, 2, 1}, {Send, All, 2, 1},
       {Receive, All, 3, 2}, {RecordEvent, All, 3, 2}, {WaitEvent, All, 0, 2}, {Run, All, 0, 2},
       {Receive, All, 3, 3}, {RecordEvent, All, 3, 3}, {WaitEvent, All, 0, 3}, {Run, All, 0, 3}},
      {{Receive, All, 2, 0}, {RecordEvent, All, 2, 0}, {WaitEvent, All, 0, 0}, {Run, All, 0, 0},
       {Run, All, 0, 1}, {RecordEvent, All, 0, 1}, {WaitEvent, All, 3, 1}, {Send, All, 3, 2},
       {Receive, All, 2, 1}, {RecordEvent, All, 2, 2}, {WaitEvent, All, 0, 2}, {Run, All, 0, 2},
       {Run, All, 0, 3}, {RecordEvent, All, 0, 3}, {WaitEvent, All, 3, 3}, {Send, All, 3, 3}}};
  uint16_t numStreams = 4;
  uint32_t numEvents = 4;

  std::vector<RankTable> ranks;
  std::vector<RankStreams> rankStreams;
  Program program{};
  StreamProgram streams{};

  // The Program and StreamProgram over the vectors as they are now.
  void link() {
    ranks.clear();
    rankStreams.clear();
    for (int r = 0; r < 2; ++r) {
      ranks.push_back({ops[r].data(), uint32_t(ops[r].size()), sends[r].data(),
                       uint32_t(sends[r].size()), receives[r].data(),
                       uint32_t(receives[r].size())});
      rankStreams.push_back({commands[r].data(), uint32_t(commands[r].size()), numStreams, numEvents});
    }
    program = {"one_f_one_b", "P = 2, M = 2", 2, 2, 2, ranks.data(), messages.data(),
               uint32_t(messages.size()), nullptr, 0, peaks.data()};
    streams = {rankStreams.data()};
  }
  std::string error() {
    link();
    return streamProgramError(program, streams);
  }
  std::string tableError() {
    link();
    return programTableError(program);
  }
};

} // namespace

TEST_CASE("validation: correct tables pass", "[runtime][validation]") {
  Tables t;
  CHECK(t.tableError() == "");
  CHECK(t.error() == "");
}

TEST_CASE("validation: indices out of range name the table and entry", "[runtime][validation]") {
  Tables t;
  SECTION("a message's rank") {
    t.messages[1].to = 7;
    CHECK_THAT(t.tableError(), Contains("kMessages[1]: to rank 7 is out of range (the program has 2 ranks)"));
  }
  SECTION("an op's stage") {
    t.ops[1][2].stage = 5;
    CHECK_THAT(t.tableError(), Contains("kRank1Ops[2]: stage 5 is out of range"));
  }
  SECTION("an op's micro-batch") {
    t.ops[0][3].microbatch = -1;
    CHECK_THAT(t.tableError(), Contains("kRank0Ops[3]: micro-batch -1 is out of range"));
  }
  SECTION("a message's consumer op") {
    t.messages[3].consumerOp = 4;
    CHECK_THAT(t.tableError(), Contains("kMessages[3]: consumer op 4 is out of range"));
  }
  SECTION("a posted message id") {
    t.receives[0][1] = 9;
    CHECK_THAT(t.tableError(), Contains("kRank0Receives[1]: message 9 is out of range"));
  }
  SECTION("a sync group's rank") {
    int32_t groupRanks[] = {0, 3}, groupChunks[] = {0, 0};
    SyncGroupTable group{0, groupRanks, groupChunks, 2};
    t.link();
    t.program.syncGroups = &group;
    t.program.numSyncGroups = 1;
    CHECK_THAT(programTableError(t.program), Contains("kSyncGroups[0]: rank 3 is out of range"));
  }
  SECTION("a command's stream") {
    t.commands[1][7].stream = 9;
    CHECK_THAT(t.error(), Contains("kRank1Commands[7]: stream 9 is out of range (the program has 4 streams on this rank)"));
  }
  SECTION("a command's event") {
    t.commands[0][5].arg = 4;
    CHECK_THAT(t.error(), Contains("kRank0Commands[5]: event 4 is out of range"));
  }
  SECTION("a command's op") {
    t.commands[0][15].arg = 12;
    CHECK_THAT(t.error(), Contains("kRank0Commands[15]: op 12 is out of range"));
  }
  SECTION("a command's message") {
    t.commands[0][3].arg = 40;
    CHECK_THAT(t.error(), Contains("kRank0Commands[3]: message 40 is out of range"));
  }
}

TEST_CASE("validation: counts the runtime allocates by are bounded", "[runtime][validation]") {
  Tables t;
  SECTION("more streams than channels") {
    t.numStreams = 7;
    CHECK_THAT(t.error(), Contains("kRankStreams[0]: has 7 streams; 2 ranks need at most 6"));
  }
  SECTION("more events than commands") {
    t.numEvents = 100000;
    CHECK_THAT(t.error(), Contains("kRankStreams[0]: has 100000 events for 16 commands"));
  }
  SECTION("stages and micro-batches far beyond the ops") {
    // The runtime would build a model and a batch that size.
    t.link();
    t.program.numStages = 2000000000;
    CHECK_THAT(programTableError(t.program),
               Contains("kProgram: numStages is 2000000000 but the ranks run only 8 ops"));
    t.program.numStages = 2;
    t.program.numMicrobatches = 9;
    CHECK_THAT(programTableError(t.program),
               Contains("kProgram: numMicrobatches is 9 but the ranks run only 8 ops"));
  }
  SECTION("a stage no op runs") {
    t.link();
    t.program.numStages = 3;
    CHECK_THAT(programTableError(t.program), Contains("kProgram: stage 2 runs no op"));
  }
}

TEST_CASE("validation: every message is sent once and received once", "[runtime][validation]") {
  Tables t;
  SECTION("posted twice") {
    t.sends[0] = {0, 0};
    CHECK_THAT(t.tableError(), Contains("kRank0Sends[1]: message 0 is posted twice"));
  }
  SECTION("never received") {
    t.receives[0] = {2};
    CHECK_THAT(t.tableError(), Contains("kMessages[3]: is in no receive order (kRank0Receives)"));
  }
  SECTION("posted by a rank it does not leave") {
    t.sends[1] = {2, 1};
    CHECK_THAT(t.tableError(), Contains("kRank1Sends[1]: message 1 goes from rank 0 to rank 1, not from this rank"));
  }
  SECTION("two messages into one op") {
    t.messages[1].consumerOp = 0;
    t.messages[1].microbatch = 0;
    t.ops[0][1].microbatch = 0;
    CHECK_THAT(t.tableError(), Contains("kMessages[1]: op 0 on rank 1 already consumes message 0"));
  }
  SECTION("a message that does not fit its ops") {
    t.messages[2].stage = 0;
    CHECK_THAT(t.tableError(), Contains("kMessages[2]: a gradient of stage 0, micro-batch 0, does not fit"));
  }
  SECTION("never sent by the stream program") {
    t.commands[1][15] = {WaitEvent, All, 3, 3};
    CHECK_THAT(t.error(), Contains("kMessages[3]: is never sent by kRank1Commands"));
  }
  SECTION("sent before its op ran") {
    std::swap(t.commands[0][0], t.commands[0][3]);
    CHECK_THAT(t.error(), Contains("kRank0Commands[0]: sends message 0 before op 0 produced it"));
  }
  SECTION("received on the compute stream") {
    t.commands[1][0].stream = 0;
    CHECK_THAT(t.error(), Contains("kRank1Commands[0]: moves message 0 on stream 0, not on a channel stream"));
  }
  SECTION("a channel's receives in another order than its sends") {
    // Rank 1 receives both activations first, in the wrong order.
    t.commands[1] = {{Receive, All, 2, 1}, {Receive, All, 2, 0}, {RecordEvent, All, 2, 0}, {WaitEvent, All, 0, 0},
                     {Run, All, 0, 0}, {Run, All, 0, 1}, {RecordEvent, All, 0, 1}, {WaitEvent, All, 3, 1},
                     {Send, All, 3, 2}, {Run, All, 0, 2}, {Run, All, 0, 3}, {RecordEvent, All, 0, 2},
                     {WaitEvent, All, 3, 2}, {Send, All, 3, 3}};
    CHECK_THAT(t.error(), Contains("kRank1Commands[0]: receive 0 from rank 0 on its channel is message 1, but send 0 there (kRank0Commands[3]) is message 0"));
  }
}

TEST_CASE("validation: events are recorded before they are waited on", "[runtime][validation]") {
  Tables t;
  SECTION("wait before record") {
    std::swap(t.commands[1][5], t.commands[1][6]);
    CHECK_THAT(t.error(), Contains("kRank1Commands[5]: waits on event 1 before it is recorded"));
  }
  SECTION("recorded twice") {
    t.commands[0][9].arg = 1;
    CHECK_THAT(t.error(), Contains("kRank0Commands[9]: records event 1 a second time"));
  }
}

TEST_CASE("validation: ops run once, whole or their parts in order", "[runtime][validation]") {
  Tables t;
  SECTION("an op run twice") {
    t.commands[0][4].arg = 0;
    CHECK_THAT(t.error(), Contains("kRank0Commands[4]: runs All of op 0 out of order"));
  }
  SECTION("a part out of its chain's order") {
    t.commands[0][0].part = RunPart::Mlp;
    CHECK_THAT(t.error(), Contains("kRank0Commands[0]: runs Mlp of op 0 out of order (0 of its 4 parts ran before)"));
  }
  SECTION("an op that runs before its input arrived") {
    std::swap(t.commands[1][0], t.commands[1][3]);
    CHECK_THAT(t.error(), Contains("kRank1Commands[0]: runs op 0 before receiving its input, message 0"));
  }
  SECTION("a Run on a channel stream") {
    t.commands[0][4].stream = 2;
    CHECK_THAT(t.error(), Contains("kRank0Commands[4]: runs op 1 on channel stream 2"));
  }
  SECTION("an unknown command") {
    t.commands[0][2].cmd = static_cast<StreamCmd>(9);
    CHECK_THAT(t.error(), Contains("kRank0Commands[2]: command 9 is unknown"));
  }
  SECTION("a pair that is not a forward then a backward") {
    t.ops[0][2].pairedWithNext = 1;
    CHECK_THAT(t.tableError(), Contains("kRank0Ops[2]: an overlap pair is a forward and then a backward"));
  }
  SECTION("a backward before its forward") {
    t.ops[1][1].chunk = 1;
    CHECK_THAT(t.tableError(), Contains("kRank1Ops[1]: the backward of stage 1, micro-batch 0 comes before its forward on this rank and chunk"));
  }
}

TEST_CASE("validation: runProgram refuses a bad table with exit status 2", "[runtime][validation]") {
  Tables t;
  t.messages[0].from = 5;
  t.link();
  std::string name = "program";
  char *argv[] = {name.data()};
  CHECK(runProgram(t.program, t.streams, 1, argv) == 2);
}

TEST_CASE("validation: replays (R) and micro-batch sizes", "[runtime][validation]") {
  Tables t;
  SECTION("a replay after its backward, where the backward comes first") {
    t.ops[1].push_back({OpCode::R, 0, 0, 1, 1});
    CHECK_THAT(t.tableError(), Contains("kRank1Ops[3]: the backward of stage 1, micro-batch 1 "
                                        "comes before its replay (R) on this rank and chunk"));
  }
  SECTION("a replay on a chunk that ran no forward of it") {
    t.ops[0].push_back({OpCode::R, 0, 1, 0, 1}); // chunk 1 of rank 0
    CHECK_THAT(t.tableError(), Contains("kRank0Ops[4]: the replay of stage 0, micro-batch 1 comes "
                                        "before its forward on this rank and chunk"));
  }
  SECTION("an unknown op kind") {
    t.ops[0][1].kind = static_cast<OpCode>(11); // past Load (7..10 are BPipe's transfers now)
    CHECK_THAT(t.tableError(), Contains("kRank0Ops[1]: op kind 11 is not F, B, I, W, R, Offload, "
                                        "Reload, Evict, Hold, Return or Load"));
  }
  SECTION("sizes") {
    std::vector<int32_t> sizes = {4, 3};
    t.link();
    t.program.microbatchSizes = sizes.data();
    CHECK(programTableError(t.program) == "");
    sizes[1] = 0;
    CHECK_THAT(programTableError(t.program), Contains("kMicrobatchSizes[1]: size 0 is outside 1 .. 2^30"));
  }
}

namespace {

// Op `op` inserted at index k of rank r, the messages' and commands' op
// indices after it moved along.
void insertOp(Tables &t, int r, uint32_t k, ProgramOp op) {
  t.ops[r].insert(t.ops[r].begin() + k, op);
  for (ProgramMessage &m : t.messages) {
    if (m.from == r && m.producerOp >= k)
      ++m.producerOp;
    if (m.to == r && m.consumerOp >= k)
      ++m.consumerOp;
  }
  for (StreamCommand &c : t.commands[r])
    if (c.cmd == Run && c.arg >= k)
      ++c.arg;
}

// Rank 0 offloads micro-batch 1 after its F and reloads it before its B, on a
// copy stream (4) of its own: F0 F1 Offload1 B0 Reload1 B1.
Tables offloading() {
  Tables t;
  insertOp(t, 0, 2, {OpCode::Offload, 0, 0, 0, 1});
  insertOp(t, 0, 4, {OpCode::Reload, 0, 0, 0, 1});
  t.numStreams = 5;
  auto &c = t.commands[0];
  // After F1's send: the copy stream waits for F1, offloads; B1 waits for the Reload.
  c.insert(c.begin() + 8, {{RecordEvent, All, 0, 4}, {WaitEvent, All, 4, 4}, {Run, All, 4, 2}});
  c.insert(c.end() - 1, {{Run, All, 4, 4}, {RecordEvent, All, 4, 5}, {WaitEvent, All, 0, 5}});
  t.numEvents = 6;
  return t;
}

} // namespace

TEST_CASE("validation: Offload and Reload", "[runtime][validation]") {
  Tables t = offloading();
  CHECK(t.tableError() == "");
  CHECK(t.error() == "");
  SECTION("a Reload without an Offload") {
    Tables plain;
    insertOp(plain, 0, 3, {OpCode::Reload, 0, 0, 0, 1});
    CHECK_THAT(plain.tableError(), Contains("kRank0Ops[3]: the Reload of stage 0, micro-batch 1 comes "
                                            "before its Offload on this rank and chunk (nothing to reload)"));
  }
  SECTION("an Offload without a Reload") {
    Tables plain;
    insertOp(plain, 0, 2, {OpCode::Offload, 0, 0, 0, 1});
    CHECK_THAT(plain.tableError(), Contains("kRank0Ops[2]: the Offload of stage 0, micro-batch 1 has no "
                                            "Reload on this rank and chunk"));
  }
  SECTION("an Offload before its forward") {
    t = Tables();
    insertOp(t, 0, 1, {OpCode::Offload, 0, 0, 0, 1});
    insertOp(t, 0, 4, {OpCode::Reload, 0, 0, 0, 1}); // F0 Offload1 F1 B0 Reload1 B1
    CHECK_THAT(t.tableError(), Contains("kRank0Ops[1]: the Offload of stage 0, micro-batch 1 comes "
                                        "before its forward on this rank and chunk"));
  }
  SECTION("a backward before its Reload") {
    t = Tables();
    insertOp(t, 0, 2, {OpCode::Offload, 0, 0, 0, 1});
    insertOp(t, 0, 5, {OpCode::Reload, 0, 0, 0, 1}); // F0 F1 Offload1 B0 B1 Reload1
    CHECK_THAT(t.tableError(), Contains("kRank0Ops[4]: the backward of stage 0, micro-batch 1 comes "
                                        "before its Reload on this rank and chunk"));
  }
  SECTION("an Offload twice") {
    insertOp(t, 0, 3, {OpCode::Offload, 0, 0, 0, 1});
    CHECK_THAT(t.tableError(), Contains("kRank0Ops[3]: stage 0, micro-batch 1 is offloaded twice on "
                                        "this rank and chunk"));
  }
  SECTION("a recomputed micro-batch moved") {
    insertOp(t, 0, 2, {OpCode::R, 0, 0, 0, 1});
    CHECK_THAT(t.tableError(), Contains("kRank0Ops[3]: the Offload of stage 0, micro-batch 1: a "
                                        "recomputed micro-batch (R) keeps no activation to move"));
  }
  SECTION("an Offload on another chunk than its forward") {
    t.ops[0][2].chunk = 1;
    t.ops[0][4].chunk = 1;
    CHECK_THAT(t.tableError(), Contains("kRank0Ops[2]: the Offload of stage 0, micro-batch 1 comes "
                                        "before its forward on this rank and chunk"));
  }
  SECTION("a memory op in an overlap pair") {
    t.ops[0][1].pairedWithNext = 1; // F1 with the Offload
    CHECK_THAT(t.tableError(), Contains("kRank0Ops[1]: an overlap pair is a forward and then a backward"));
  }
  SECTION("a copy on the expert stream") {
    t.commands[0][10].stream = 1;
    CHECK_THAT(t.error(), Contains("kRank0Commands[10]: runs Offload op 2 on the expert stream"));
  }
  SECTION("a copy on a channel's stream") {
    t.commands[0][10].stream = 2;
    CHECK_THAT(t.error(), Contains("kRank0Commands[10]: stream 2 both moves messages and runs Offload/Reload"));
  }
  SECTION("a part of a copy") {
    t.commands[0][10].part = RunPart::Mlp;
    CHECK_THAT(t.error(), Contains("kRank0Commands[10]: runs a part of Offload op 2, which has none"));
  }
}

TEST_CASE("validation: runProgram runs Offload and Reload", "[runtime][validation]") {
  Tables t = offloading();
  t.link();
  std::string name = "program";
  std::string steps = "--steps", two = "2", check = "--check";
  char *argv[] = {name.data(), steps.data(), two.data(), check.data()};
  CHECK(runProgram(t.program, t.streams, 4, argv) == 0);
}

namespace {

// BPipe's transfers on the 2-rank tables: rank 0 evicts micro-batch 1 to rank
// 1 after its F and loads it back before its B (F0 F1 Evict1 B0 Load1 B1);
// rank 1 holds and returns it (F0 B0 Hold1 F1 Return1 B1). Messages 4
// (evicted, Evict -> Hold) and 5 (returned, Return -> Load). `evictAt` and
// `loadAt` (after the Evict's insertion) place rank 0's two ops.
Tables transferring(uint32_t evictAt = 2, uint32_t loadAt = 4) {
  Tables t;
  insertOp(t, 0, evictAt, {OpCode::Evict, 0, 0, 0, 1});
  insertOp(t, 0, loadAt, {OpCode::Load, 0, 0, 0, 1});
  insertOp(t, 1, 2, {OpCode::Hold, 0, 0, 0, 1}); // the owner's chunk 0 and stage 0
  insertOp(t, 1, 4, {OpCode::Return, 0, 0, 0, 1});
  t.messages.push_back({kEvictedMessage, 0, 1, 0, 1, evictAt, 2});
  t.messages.push_back({kReturnedMessage, 1, 0, 0, 1, 4, loadAt});
  t.sends[0].push_back(4);
  t.receives[1].push_back(4);
  t.sends[1].push_back(5);
  t.receives[0].push_back(5);
  return t;
}

} // namespace

TEST_CASE("validation: Evict, Hold, Return and Load", "[runtime][validation]") {
  Tables t = transferring();
  CHECK(t.tableError() == "");
  SECTION("a Hold without its Evict") {
    Tables plain;
    insertOp(plain, 1, 2, {OpCode::Hold, 0, 0, 0, 1});
    insertOp(plain, 1, 4, {OpCode::Return, 0, 0, 0, 1});
    CHECK_THAT(plain.tableError(), Contains("kRank1Ops[2]: the Hold of stage 0, micro-batch 1 receives "
                                            "no evicted message: a Hold without its Evict"));
  }
  SECTION("a Load before its Evict (nothing to load)") {
    Tables u;
    insertOp(u, 0, 2, {OpCode::Load, 0, 0, 0, 1});
    CHECK_THAT(u.tableError(), Contains("kRank0Ops[2]: the Load of stage 0, micro-batch 1 comes before "
                                        "its Evict on this rank and chunk (nothing to load)"));
  }
  SECTION("a Return before its Hold (nothing held)") {
    std::swap(t.ops[1][2], t.ops[1][4]); // F0 B0 Return1 F1 Hold1 B1
    t.messages[4].consumerOp = 4;
    t.messages[5].producerOp = 2;
    CHECK_THAT(t.tableError(), Contains("kRank1Ops[2]: the Return of stage 0, micro-batch 1 (rank 0's "
                                        "chunk 0) comes before its Hold on this rank (nothing held to "
                                        "return)"));
  }
  SECTION("evicted twice") {
    insertOp(t, 0, 3, {OpCode::Evict, 0, 0, 0, 1});
    CHECK_THAT(t.tableError(), Contains("kRank0Ops[3]: stage 0, micro-batch 1 is evicted twice on this "
                                        "rank and chunk"));
  }
  SECTION("an Evict before its forward") {
    t = transferring(1, 4); // F0 Evict1 F1 B0 Load1 B1
    CHECK_THAT(t.tableError(), Contains("kRank0Ops[1]: the Evict of stage 0, micro-batch 1 comes "
                                        "before its forward on this rank and chunk"));
  }
  SECTION("a backward before its Load") {
    t = transferring(2, 5); // F0 F1 Evict1 B0 B1 Load1
    CHECK_THAT(t.tableError(), Contains("kRank0Ops[4]: the backward of stage 0, micro-batch 1 comes "
                                        "before its Load on this rank and chunk"));
  }
  SECTION("an Evict with no Load") {
    Tables u;
    insertOp(u, 0, 2, {OpCode::Evict, 0, 0, 0, 1});
    CHECK_THAT(u.tableError(), Contains("kRank0Ops[2]: the Evict of stage 0, micro-batch 1 has no Load "
                                        "on this rank and chunk"));
  }
  SECTION("both offloaded and evicted") {
    insertOp(t, 0, 3, {OpCode::Offload, 0, 0, 0, 1});
    insertOp(t, 0, 5, {OpCode::Reload, 0, 0, 0, 1});
    CHECK_THAT(t.tableError(), Contains("kRank0Ops[2]: stage 0, micro-batch 1 is both offloaded and "
                                        "evicted on this rank and chunk"));
  }
  SECTION("a transfer to itself") {
    t.messages[4].to = 0;
    CHECK_THAT(t.tableError(), Contains("kMessages[4]: goes from rank 0 to itself"));
  }
  SECTION("a transfer out of range") {
    t.messages[5].from = 2;
    CHECK_THAT(t.tableError(), Contains("kMessages[5]: from rank 2 is out of range (the program has 2 ranks)"));
  }
  SECTION("an evicted message into another op than a Hold") {
    t.messages[4].consumerOp = 3; // rank 1's F1
    CHECK_THAT(t.tableError(), Contains("kMessages[4]: an evicted activation of stage 0, micro-batch 1, "
                                        "does not fit its producer op 2 on rank 0 or consumer op 3 on rank 1"));
  }
  SECTION("a message kind past the returned one") {
    t.messages[4].gradient = 4;
    CHECK_THAT(t.tableError(), Contains("kMessages[4]: kind 4 is not activation (0), gradient (1), "
                                        "evicted (2) or returned (3)"));
  }
}

TEST_CASE("validation: a Load from a rank that holds nothing of it", "[runtime][validation]") {
  // Three ranks, one stage each, one micro-batch: rank 0 evicts its
  // activation to rank 2 but loads it from rank 1, whose Return sends what it
  // never held.
  const OpCode Evict = OpCode::Evict, Hold = OpCode::Hold, Return = OpCode::Return,
               Load = OpCode::Load;
  std::vector<ProgramOp> ops[3] = {
      {{F, 0, 0, 0, 0}, {Evict, 0, 0, 0, 0}, {Load, 0, 0, 0, 0}, {B, 0, 0, 0, 0}},
      {{F, 0, 0, 1, 0}, {B, 0, 0, 1, 0}, {Return, 0, 0, 0, 0}},
      {{F, 0, 0, 2, 0}, {Hold, 0, 0, 0, 0}, {B, 0, 0, 2, 0}}};
  std::vector<ProgramMessage> messages = {
      {kActivationMessage, 0, 1, 0, 0, 0, 0}, {kActivationMessage, 1, 2, 1, 0, 0, 0},
      {kGradientMessage, 2, 1, 2, 0, 2, 1},   {kGradientMessage, 1, 0, 1, 0, 1, 3},
      {kEvictedMessage, 0, 2, 0, 0, 1, 1},    {kReturnedMessage, 1, 0, 0, 0, 2, 2}};
  std::vector<uint32_t> sends[3] = {{0, 4}, {1, 3, 5}, {2}}, receives[3] = {{3, 5}, {0, 2}, {1, 4}};
  std::vector<RankTable> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.push_back({ops[r].data(), uint32_t(ops[r].size()), sends[r].data(),
                     uint32_t(sends[r].size()), receives[r].data(), uint32_t(receives[r].size())});
  std::vector<int64_t> peaks = {1, 1, 2};
  Program program = {"misrouted", "P = 3, M = 1", 3, 3, 1, ranks.data(), messages.data(),
                     uint32_t(messages.size()), nullptr, 0, peaks.data()};
  CHECK_THAT(programTableError(program),
             Contains("kRank0Ops[2]: the Load of stage 0, micro-batch 0 receives from rank 1, but "
                      "its Evict went to rank 2: rank 1 holds nothing of it"));
  // Routed back through rank 2, which holds it, the tables pass.
  messages[5] = {kReturnedMessage, 2, 0, 0, 0, 2, 2};
  ops[1] = {{F, 0, 0, 1, 0}, {B, 0, 0, 1, 0}};
  ops[2] = {{F, 0, 0, 2, 0}, {Hold, 0, 0, 0, 0}, {Return, 0, 0, 0, 0}, {B, 0, 0, 2, 0}};
  messages[2].producerOp = 3;
  sends[1] = {1, 3};
  sends[2] = {2, 5};
  ranks.clear();
  for (int r = 0; r < 3; ++r)
    ranks.push_back({ops[r].data(), uint32_t(ops[r].size()), sends[r].data(),
                     uint32_t(sends[r].size()), receives[r].data(), uint32_t(receives[r].size())});
  program.ranks = ranks.data();
  CHECK(programTableError(program) == "");
}
