// The encoded program tables (pipert/ProgramEncoding.h): what pipec encodes
// decodes to the same tables, for every library schedule and for random ones
// (ScheduleGenerator.h), with and without stream programs; and damaged data
// (truncated, bytes flipped, overlong varints, huge counts) is refused with a
// located error, never a crash or a runaway allocation.
#include "check/Checks.h"
#include "codegen/ProgramTables.h"
#include "codegen/StreamLowering.h"
#include "pipert/ProgramEncoding.h"

#include "ScheduleGenerator.h"
#include "TestSupport.h"

#include <catch2/catch.hpp>

#include <random>

using namespace pipec;
using namespace pipec::test;

namespace {

// The tables as `pipec emit` builds them: with `streams`, as for --target cuda.
pipert::ProgramData tablesOf(const ScheduleIR &ir, const CheckReport &report, bool streams) {
  pipert::ProgramData data = programData(ir, report);
  if (!streams)
    return data;
  data.hasStreams = true;
  for (RankStreamProgram &rank : lowerToStreams(ir, report, streamPlanCosts(ir, {}).model)) {
    pipert::ProgramData::Streams s;
    s.commands = std::move(rank.commands);
    s.numStreams = rank.numStreams;
    s.numEvents = rank.numEvents;
    data.streams.push_back(std::move(s));
  }
  return data;
}

pipert::ProgramData libraryTables(const std::string &name, int P, int M, bool streams) {
  ElabOptions options;
  options.defines = {{"P", P}, {"M", M}};
  auto compiled = compile(readExample(name), options);
  REQUIRE(compiled->ir);
  CheckReport report = runChecks(*compiled->ir, CheckOptions{}, compiled->diags);
  REQUIRE(report.ok);
  return tablesOf(*compiled->ir, report, streams);
}

// Encoded, as base64 text, and decoded again.
pipert::ProgramData roundTrip(const pipert::ProgramData &data) {
  std::string text = pipert::toBase64(pipert::encodeProgram(data));
  pipert::ProgramData decoded;
  std::string problem = pipert::decodeProgramText(text.data(), text.size(), decoded);
  INFO(problem);
  REQUIRE(problem.empty());
  return decoded;
}

std::string decodeError(const std::vector<uint8_t> &bytes) {
  pipert::ProgramData data;
  return pipert::decodeProgram(bytes.data(), bytes.size(), data);
}

} // namespace

TEST_CASE("encoded tables of every library schedule decode to the same tables", "[encoding]") {
  struct Case {
    const char *name;
    int P, M;
  };
  for (Case c : {Case{"gpipe", 4, 6}, Case{"1f1b", 4, 8}, Case{"1f1b", 1, 3},
                 Case{"interleaved_1f1b", 4, 8}, Case{"zb_h1", 4, 8}, Case{"zbv", 4, 9},
                 Case{"chimera", 4, 8}, Case{"dualpipe", 4, 10}, Case{"dualpipev", 8, 32},
                 Case{"zb_h2", 4, 10}})
    for (bool streams : {false, true}) {
      INFO(c.name << " P=" << c.P << " M=" << c.M << (streams ? " with streams" : ""));
      pipert::ProgramData original = libraryTables(c.name, c.P, c.M, streams);
      CHECK(roundTrip(original) == original);
    }
}

TEST_CASE("a regular schedule costs a few bytes per op and command", "[encoding]") {
  pipert::ProgramData data = libraryTables("dualpipev", 8, 64, true);
  size_t entries = data.messages.size();
  for (size_t r = 0; r < data.ranks.size(); ++r)
    entries += data.ranks[r].ops.size() + data.streams[r].commands.size();
  size_t bytes = pipert::encodeProgram(data).size();
  INFO(bytes << " bytes for " << entries << " ops, messages and commands");
  CHECK(bytes < 2 * entries);
}

TEST_CASE("encoded tables of random schedules decode to the same tables", "[encoding][property]") {
  ScheduleGenerator gen(0xc0de5eedu);
  int encoded = 0;
  for (int c = 0; c < 300; ++c) {
    GenSchedule g = gen.valid();
    auto compiled = compile(g.source());
    if (!compiled->ir)
      continue;
    CheckReport report = runChecks(*compiled->ir, CheckOptions{}, compiled->diags);
    if (!report.ok)
      continue;
    INFO("case " << c << ": " << g.history);
    pipert::ProgramData original = tablesOf(*compiled->ir, report, c % 2 == 1);
    CHECK(roundTrip(original) == original);
    ++encoded;
  }
  CHECK(encoded > 200); // otherwise the generator says too little
}

TEST_CASE("tables outside what pipec writes still round-trip", "[encoding]") {
  // Negative and extreme values, ids far apart, empty ranks: the encoding
  // codes what it is given; whether it makes sense is ProgramValidation's.
  pipert::ProgramData d;
  d.name = "odd \"name\"\n";
  d.numRanks = 3;
  d.numStages = -1;
  d.numMicrobatches = 2147483647;
  d.ranks.resize(3);
  d.ranks[0].ops = {{pipert::OpCode::W, 1, -32768, -2147483647 - 1, 2147483647},
                    {pipert::OpCode::F, 0, 32767, 2147483647, -2147483647 - 1}};
  d.ranks[2].sends = {4294967295u, 0, 7};
  d.messages = {{1, -5, 2147483647, 0, 2147483647, 4294967295u, 0},
                {0, -5, 2147483647, 0, 2147483647, 4294967295u, 4294967295u},
                {1, 0, 0, -3, -2147483647 - 1, 0, 1}};
  d.syncGroups = {{-4, {1, 2}, {-1, 2147483647}}, {0, {}, {}}};
  d.predictedPeakActivations = {-1, 0, (int64_t(1) << 62)};
  d.hasStreams = true;
  d.streams.resize(3);
  d.streams[1].numStreams = 65535;
  d.streams[1].numEvents = 4294967295u;
  d.streams[1].commands = {{pipert::StreamCmd::WaitEvent, pipert::RunPart::Combine, 65535, 4294967295u},
                           {pipert::StreamCmd::RecordEvent, pipert::RunPart::Whole, 0, 0},
                           {pipert::StreamCmd::Run, pipert::RunPart::Mlp, 3, 4294967295u},
                           {pipert::StreamCmd::Run, pipert::RunPart::Mlp, 3, 0}};
  CHECK(roundTrip(d) == d);
}

TEST_CASE("replays (R) and micro-batch sizes round-trip", "[encoding]") {
  // Program format 5: the op kind takes three bits (R is 4), and sizes follow
  // the stream programs when the flags say so.
  pipert::ProgramData d;
  d.name = "sized";
  d.numRanks = 1;
  d.numStages = 1;
  d.numMicrobatches = 3;
  d.ranks.resize(1);
  d.ranks[0].ops = {{pipert::OpCode::F, 0, 0, 0, 0}, {pipert::OpCode::R, 0, 0, 0, 0},
                    {pipert::OpCode::B, 0, 0, 0, 0}, {pipert::OpCode::R, 1, 3, 0, 2}};
  d.predictedPeakActivations = {4};
  d.microbatchSizes = {4, 1, 1 << 30};
  pipert::ProgramData back = roundTrip(d);
  CHECK(back == d);
  CHECK(back.ranks[0].ops[3].kind == pipert::OpCode::R);
  CHECK(back.ranks[0].ops[3].pairedWithNext == 1);
  CHECK(back.microbatchSizes == d.microbatchSizes);
  pipert::ProgramData unsized = d;
  unsized.microbatchSizes.clear();
  CHECK(roundTrip(unsized).microbatchSizes.empty());
  CHECK_FALSE(unsized == d); // the sizes are part of what is compared
  // Cut inside the sizes: an error naming a byte, never a short list.
  std::vector<uint8_t> bytes = pipert::encodeProgram(d);
  bytes.pop_back();
  CHECK(decodeError(bytes).rfind("byte ", 0) == 0);
}

TEST_CASE("Offload and Reload round-trip, a kind past them is refused", "[encoding]") {
  // 1F1B with offloading: the op codes 5 and 6 in the kind's three bits, and
  // the copy stream each offloading rank has after its channels.
  for (int K : {2, 3}) {
    ElabOptions options;
    options.defines = {{"P", 4}, {"M", 8}, {"K", K}};
    auto compiled = compile(readExample("1f1b_offload"), options);
    REQUIRE(compiled->ir);
    CheckReport report = runChecks(*compiled->ir, CheckOptions{}, compiled->diags);
    REQUIRE(report.ok);
    pipert::ProgramData d = tablesOf(*compiled->ir, report, true);
    pipert::ProgramData back = roundTrip(d);
    CHECK(back == d);
    int offloads = 0, reloads = 0;
    for (const auto &rank : back.ranks)
      for (const pipert::ProgramOp &op : rank.ops) {
        offloads += op.kind == pipert::OpCode::Offload;
        reloads += op.kind == pipert::OpCode::Reload;
      }
    // Rank r offloads micro-batches K-1 .. M-1 when P - r > K.
    int expected = 0;
    for (int r = 0; r < 4; ++r)
      expected += 4 - r > K ? 8 - (K - 1) : 0;
    CHECK(offloads == expected);
    CHECK(reloads == expected);
    // Rank 0 offloads: its last stream is the copy stream, running only memory ops.
    const auto &streams = back.streams[0];
    uint16_t copy = uint16_t(streams.numStreams - 1);
    int copies = 0;
    for (const pipert::StreamCommand &c : streams.commands)
      if (c.cmd == pipert::StreamCmd::Run && c.stream == copy) {
        CHECK(pipert::isMemoryOp(back.ranks[0].ops[c.arg].kind));
        ++copies;
      } else if (c.cmd == pipert::StreamCmd::Run) {
        CHECK_FALSE(pipert::isMemoryOp(back.ranks[0].ops[c.arg].kind));
      }
    CHECK(copies == 2 * (8 - (K - 1)));
  }
  // A corrupted kind: the lead byte of an op, found as the one byte where a
  // Reload's encoding differs from a B's (each the first of its kind, so both
  // are predicted alike), with the kind 7 instead.
  pipert::ProgramData d;
  d.name = "moves";
  d.numRanks = 1;
  d.numStages = 1;
  d.numMicrobatches = 1;
  d.ranks.resize(1);
  d.ranks[0].ops = {{pipert::OpCode::F, 0, 0, 0, 0}, {pipert::OpCode::Reload, 0, 0, 0, 0}};
  d.predictedPeakActivations = {1};
  std::vector<uint8_t> reload = pipert::encodeProgram(d);
  d.ranks[0].ops[1].kind = pipert::OpCode::B;
  std::vector<uint8_t> backward = pipert::encodeProgram(d);
  REQUIRE(reload.size() == backward.size());
  size_t at = reload.size();
  for (size_t i = 0; i < reload.size(); ++i)
    if (reload[i] != backward[i]) {
      CHECK(at == reload.size()); // one byte differs
      at = i;
    }
  REQUIRE(at < reload.size());
  CHECK((reload[at] & 7) == 6);
  reload[at] = uint8_t((reload[at] & ~7) | 7);
  CHECK(decodeError(reload).rfind("byte " + std::to_string(at) + ": ", 0) == 0);
  CHECK(decodeError(reload).find("kind") != std::string::npos);
}

TEST_CASE("BPipe's transfers round-trip in format 6; other programs keep format 5", "[encoding]") {
  // The version is the varint right after "PIPT".
  pipert::ProgramData bpipe = libraryTables("bpipe", 8, 16, true);
  std::vector<uint8_t> bytes = pipert::encodeProgram(bpipe);
  REQUIRE(bytes.size() > 5);
  CHECK(int(bytes[4]) == pipert::kProgramFormatTransfers);
  CHECK(pipert::formatVersionOf(bpipe) == pipert::kProgramFormatTransfers);
  pipert::ProgramData back = roundTrip(bpipe);
  CHECK(back == bpipe);
  // Evictors 0..2 (P - r > T = 5) evict micro-batches T-1 .. M-1: 12 each;
  // their acceptors hold and return as many; the messages are of kinds 2 and 3.
  int counts[pipert::kNumOpCodes] = {};
  for (const auto &rank : back.ranks)
    for (const pipert::ProgramOp &op : rank.ops)
      ++counts[int(op.kind)];
  for (pipert::OpCode kind : {pipert::OpCode::Evict, pipert::OpCode::Hold, pipert::OpCode::Return,
                              pipert::OpCode::Load})
    CHECK(counts[int(kind)] == 3 * 12);
  int kinds[pipert::kNumMessageKinds] = {};
  for (const pipert::ProgramMessage &m : back.messages)
    ++kinds[m.gradient];
  CHECK(kinds[pipert::kEvictedMessage] == 36);
  CHECK(kinds[pipert::kReturnedMessage] == 36);
  // Each (from, to, kind) is its own channel key: evictor 3 -> acceptor 4 is
  // also an activation channel (adjacent stages), and the keys differ.
  CHECK(pipert::channelKey(3, 4, unsigned(pipert::kEvictedMessage)) !=
        pipert::channelKey(3, 4, unsigned(pipert::kActivationMessage)));
  // A schedule without transfers stays in format 5.
  CHECK(int(pipert::encodeProgram(libraryTables("1f1b_offload", 4, 8, true))[4]) ==
        pipert::kProgramFormatVersion);
  // Read as format 5, the first transfer (rank 0's first Evict, kind 7, which
  // fits three bits) is refused naming its byte and the format it needs.
  bytes[4] = uint8_t(pipert::kProgramFormatVersion);
  CHECK(decodeError(bytes).rfind("byte ", 0) == 0);
  CHECK(decodeError(bytes).find("an op of program format 5 has kind Evict (7), a BPipe transfer, "
                                "which needs format 6") != std::string::npos);
  // A format this runtime does not read is refused by its version.
  bytes[4] = uint8_t(pipert::kProgramFormatTransfers + 1);
  CHECK(decodeError(bytes).find("program format 7, this runtime reads format 5: re-emit it with a "
                                "matching pipec (it reads format 6 too") != std::string::npos);
}

TEST_CASE("damaged program data is refused with the byte it failed at", "[encoding]") {
  pipert::ProgramData original = libraryTables("dualpipe", 4, 10, true);
  std::vector<uint8_t> bytes = pipert::encodeProgram(original);

  SECTION("every truncation") {
    for (size_t n = 0; n < bytes.size(); ++n) {
      std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
      CHECK_FALSE(decodeError(cut).empty());
    }
  }
  SECTION("trailing bytes") {
    bytes.push_back(0);
    CHECK(decodeError(bytes) == "byte " + std::to_string(bytes.size() - 1) +
                                    ": 1 bytes follow the tables");
  }
  SECTION("another format") {
    // (5 + 1 is format 6 now, which this runtime reads: the next past it.)
    bytes[4] = uint8_t(pipert::kProgramFormatTransfers + 1);
    CHECK(decodeError(bytes).find("re-emit it with a matching pipec") != std::string::npos);
  }
  SECTION("flipped bytes decode to an error or to tables, never a crash") {
    std::mt19937 random(7);
    int refused = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      std::vector<uint8_t> damaged = bytes;
      for (int k = 0; k <= trial % 3; ++k)
        damaged[random() % damaged.size()] ^= uint8_t(1u << (random() % 8));
      pipert::ProgramData decoded;
      std::string problem = pipert::decodeProgram(damaged.data(), damaged.size(), decoded);
      if (!problem.empty()) {
        CHECK(problem.rfind("byte ", 0) == 0);
        ++refused;
      }
    }
    CHECK(refused > 1000); // most damage is caught here, the rest by ProgramValidation
  }
  SECTION("an overlong varint") {
    std::vector<uint8_t> head(bytes.begin(), bytes.begin() + 4); // "PIPT"
    for (int i = 0; i < 10; ++i)
      head.push_back(0xff);
    head.push_back(0x01);
    CHECK(decodeError(head) == "byte 4: the format version overflows 64 bits");
  }
  SECTION("a count larger than the data allocates nothing") {
    std::vector<uint8_t> head(bytes.begin(), bytes.begin() + 5); // "PIPT", version
    for (uint8_t b : {0xff, 0xff, 0xff, 0xff, 0x0f}) // a name of 4 GiB
      head.push_back(b);
    CHECK(decodeError(head) == "byte 5: the schedule name 4294967295 is more than the 0 bytes "
                               "left can hold");
  }
  SECTION("not base64, or not the program's magic") {
    pipert::ProgramData decoded;
    CHECK(pipert::decodeProgramText("UElQ!A==", 8, decoded) ==
          "invalid program data: character 4: '!' is not base64");
    CHECK(pipert::decodeProgramText("UElQ", 3, decoded) ==
          "invalid program data: its length 3 is not a multiple of 4");
    CHECK(pipert::decodeProgramText("AAAA", 4, decoded) ==
          "invalid program data: byte 0: it does not start with \"PIPT\"");
  }
}

TEST_CASE("the dump names the tables as validation errors do", "[encoding]") {
  std::string dump = pipert::dumpProgram(libraryTables("1f1b", 2, 2, true));
  CHECK(dump.find("program one_f_one_b (P = 2, M = 2): 2 ranks, 2 stages, 2 micro-batches\n") == 0);
  CHECK(dump.find("kRank0Ops[4]:\n    /* 0 */ {F,0,0,0,0}, {F,0,0,0,1}, {B,0,0,0,0}, {B,0,0,0,1},\n") !=
        std::string::npos);
  CHECK(dump.find("kRank1Receives[2]: 0, 1\n") != std::string::npos);
  CHECK(dump.find("kRank0Commands[") != std::string::npos);
}
