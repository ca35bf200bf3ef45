// The shared test tables and runners (see TestPrograms.h).
#include "TestPrograms.h"

#include "TestStreams.h"

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace pipert::test {

namespace {
constexpr OpCode F = OpCode::F, B = OpCode::B, I = OpCode::I, W = OpCode::W;

const ProgramOp kOneFOneB0[] = {{F, 0, 0, 0, 0}, {F, 0, 0, 0, 1}, {B, 0, 0, 0, 0}, {B, 0, 0, 0, 1}};
const ProgramOp kOneFOneB1[] = {{F, 0, 0, 1, 0}, {B, 0, 0, 1, 0}, {F, 0, 0, 1, 1}, {B, 0, 0, 1, 1}};
const ProgramMessage kOneFOneBMessages[] = {
    {0, 0, 1, 0, 0, 0, 0}, {0, 0, 1, 0, 1, 1, 2}, {1, 1, 0, 1, 0, 1, 2}, {1, 1, 0, 1, 1, 3, 3}};
const uint32_t kSends0[] = {0, 1}, kReceives0[] = {2, 3}, kSends1[] = {2, 3}, kReceives1[] = {0, 1};
const RankTable kOneFOneBRanks[] = {{kOneFOneB0, 4, kSends0, 2, kReceives0, 2},
                                    {kOneFOneB1, 4, kSends1, 2, kReceives1, 2}};
const int64_t kOneFOneBPeaks[] = {2, 1};

const ProgramOp kVOps[] = {{F, 0, 0, 0, 0}, {F, 0, 1, 1, 0}, {F, 1, 0, 0, 1}, {B, 0, 1, 1, 0},
                           {B, 0, 0, 0, 0}, {F, 0, 1, 1, 1}, {I, 0, 1, 1, 1}, {B, 0, 0, 0, 1},
                           {W, 0, 1, 1, 1}};
const RankTable kVRanks[] = {{kVOps, 9, nullptr, 0, nullptr, 0}};
const int64_t kVPeaks[] = {3};
} // namespace

const Program kOneFOneB{"one_f_one_b", "P = 2, M = 2", 2, 2, 2, kOneFOneBRanks,
                        kOneFOneBMessages, 4, nullptr, 0, kOneFOneBPeaks};
const Program kV{"v", "M = 2", 1, 2, 2, kVRanks, nullptr, 0, nullptr, 0, kVPeaks};

int runTestProgram(const Program &program, std::vector<std::string> args) {
  std::vector<char *> argv;
  static std::string name = "program";
  argv.push_back(name.data());
  for (std::string &a : args)
    argv.push_back(a.data());
  OwnedStreams streams = lowerForTest(program);
  return runProgram(program, streams.program, static_cast<int>(argv.size()), argv.data());
}

std::string outputOf(int fd, const std::function<int()> &f, int &result) {
  std::string file = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                     "/pipert_output_" + std::to_string(::getpid()) + "_" + std::to_string(fd);
  std::FILE *stream = fd == 1 ? stdout : stderr;
  std::fflush(stream);
  int saved = ::dup(fd);
  int out = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(out, fd);
  ::close(out);
  result = f();
  std::fflush(stream);
  ::dup2(saved, fd);
  ::close(saved);
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(file.c_str());
  return text.str();
}

} // namespace pipert::test
