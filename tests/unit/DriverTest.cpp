// The driver's building blocks: a compilation from text, the input reader, and
// the helpers that keep user file names out of generated code.
#include "TestSupport.h"
#include "diag/DiagnosticRenderer.h"
#include "frontend/Compilation.h"
#include "support/InputFile.h"
#include "support/SafeText.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

using namespace pipec;

TEST_CASE("a compilation built from text runs every phase but load", "[driver]") {
  auto compilation = Compilation::fromText("inline.pipe", test::withBody("F; B;", 2, 1));
  REQUIRE(compilation->runAll(ElabOptions{}, CheckOptions{}));
  CHECK(compilation->path() == "inline.pipe");
  REQUIRE(compilation->report());
  std::vector<std::string> passes;
  for (const PassTime &t : compilation->times())
    passes.push_back(t.pass);
  CHECK(passes == std::vector<std::string>{"parse", "resolve", "elaborate", "check"});
}

TEST_CASE("diagnostics of a compilation from text name its buffer", "[driver]") {
  auto compilation = Compilation::fromText("named.pipe", "schedule broken( {\n");
  CHECK_FALSE(compilation->runAll(ElabOptions{}, CheckOptions{}));
  std::string text;
  llvm::raw_string_ostream out(text);
  renderText(compilation->diags(), out, false);
  CHECK(out.str().rfind("named.pipe:1:", 0) == 0);
}

TEST_CASE("the input reader refuses directories and endless files", "[driver]") {
  std::string error;
  CHECK_FALSE(readInputFile(PIPEC_EXAMPLES_DIR, error));
  CHECK(error == "Is a directory");
  error.clear();
  CHECK_FALSE(readInputFile("/dev/zero", error));
  CHECK(error == "larger than the 12 MiB limit for an input file");
}

TEST_CASE("the input reader reads a file of exactly the limit", "[driver]") {
  llvm::SmallString<128> path;
  int fd;
  REQUIRE_FALSE(llvm::sys::fs::createTemporaryFile("pipec-limit", "pipe", fd, path));
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    std::string block(1 << 20, '\n');
    for (uint64_t written = 0; written < kMaxInputBytes; written += block.size())
      out << block;
  }
  std::string error;
  auto buffer = readInputFile(path, error);
  llvm::sys::fs::remove(path);
  REQUIRE(buffer);
  CHECK(buffer->getBufferSize() == kMaxInputBytes);
}

TEST_CASE("the input reader reads files that report no size", "[driver]") {
  std::string error;
  auto buffer = readInputFile("/proc/self/status", error);
  REQUIRE(buffer);
  CHECK(buffer->getBufferIdentifier() == "/proc/self/status");
  CHECK(buffer->getBuffer().startswith("Name:"));
}

TEST_CASE("file names are made safe for comments and for file names", "[driver]") {
  CHECK(commentSafe("a\nb\r\x7f.pipe") == "a?b??.pipe");
  CHECK(commentSafe("dir/ok name.pipe") == "dir/ok name.pipe");
  CHECK(fileNameSafe("x\n#error injected\n", "program") == "x__error_injected_");
  CHECK(fileNameSafe("dual-pipe_v2.x", "program") == "dual-pipe_v2.x");
  for (const char *degenerate : {"", ".", "..", "-"})
    CHECK(fileNameSafe(degenerate, "program") == "program");
}
