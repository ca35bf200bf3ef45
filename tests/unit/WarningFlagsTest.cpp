// The warnings' wording in the registry, the -W flags, and how the engine
// applies them: off, promoted to errors, or exempt from --werror.
#include "diag/Diagnostics.h"
#include "diag/WarningFlags.h"

#include "llvm/Support/SourceMgr.h"

#include <catch2/catch.hpp>

#include <regex>
#include <set>

using namespace pipec;

namespace {

DiagKind kindNamed(const std::string &name) {
  llvm::ArrayRef<DiagKindInfo> kinds = allDiagKinds();
  for (size_t i = 0; i < kinds.size(); ++i)
    if (name == kinds[i].name)
      return static_cast<DiagKind>(i);
  FAIL("no kind " << name);
  return DiagKind::SyntaxError;
}

WarningFlags flagsFrom(std::initializer_list<const char *> flags) {
  WarningFlags result;
  std::string error;
  for (const char *flag : flags)
    REQUIRE(result.apply(flag, error));
  return result;
}

} // namespace

TEST_CASE("each warning's wording uses its arguments 0 to N-1, each at least once",
          "[warnings]") {
  for (const DiagKindInfo &info : allDiagKinds()) {
    if (!info.text)
      continue;
    INFO(info.name);
    CHECK(info.severity == Severity::Warning);
    std::set<int> used;
    std::string text = info.text;
    std::regex placeholder("\\{([0-9]+)\\}");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), placeholder);
         it != std::sregex_iterator(); ++it)
      used.insert(std::stoi((*it)[1]));
    REQUIRE(!used.empty());
    CHECK(*used.begin() == 0);
    CHECK(*used.rbegin() == static_cast<int>(used.size()) - 1);
  }
}

TEST_CASE("diagText fills the registry's wording", "[warnings]") {
  CHECK(diagText(DiagKind::UnusedLet, "x") == "'x' is never used");
  CHECK(diagText(DiagKind::ReversedLoopRange, int64_t(4), 2) ==
        "loop range 4..2 is empty: its start is above its end");
  CHECK(diagTextFrom(DiagKind::PairCostMismatch, {"stage 0", "1.5", "2"}) ==
        "stage 0: FB = 1.5, but the sub-operation costs plan a pair of 2; the simulator uses FB "
        "while a CUDA program runs the plan");
  CHECK(diagArg(0.1) == "0.1");
  // A missing argument leaves its placeholder as written rather than reading past the list.
  CHECK(diagTextFrom(DiagKind::UnusedParameter, {}) == "parameter '{0}' is never used");
}

TEST_CASE("warning flags apply in order: the later one wins", "[warnings]") {
  DiagKind unused = DiagKind::UnusedLet;
  CHECK(flagsFrom({"no-UnusedLet"}).policy.isDisabled(unused));
  CHECK_FALSE(flagsFrom({"no-UnusedLet", "UnusedLet"}).policy.isDisabled(unused));
  CHECK(flagsFrom({"UnusedLet", "no-UnusedLet"}).policy.isDisabled(unused));

  WarningFlags error = flagsFrom({"error=UnusedLet"});
  CHECK(error.policy.isError(unused));
  CHECK_FALSE(error.policy.isError(DiagKind::ShadowedName));
  CHECK_FALSE(flagsFrom({"error=UnusedLet", "no-error=UnusedLet"}).policy.isError(unused));
  // Turned off after being made an error: off.
  CHECK(flagsFrom({"error=UnusedLet", "no-UnusedLet"}).policy.isDisabled(unused));
  // -Werror=X turns X on again.
  CHECK_FALSE(flagsFrom({"no-UnusedLet", "error=UnusedLet"}).policy.isDisabled(unused));

  CHECK(flagsFrom({"error"}).werror);
  CHECK_FALSE(flagsFrom({"error", "no-error"}).werror);
  CHECK(flagsFrom({"no-error=UnusedLet"}).policy.isExemptFromWerror(unused));
}

TEST_CASE("warning flags that name no warning are refused with a suggestion", "[warnings]") {
  WarningFlags flags;
  std::string error;
  CHECK_FALSE(flags.apply("UnusedLt", error));
  CHECK(error == "-WUnusedLt: unknown warning 'UnusedLt'; did you mean 'UnusedLet'?");
  CHECK_FALSE(flags.apply("no-unusedparameter", error));
  CHECK(error == "-Wno-unusedparameter: unknown warning 'unusedparameter'; did you mean "
                 "'UnusedParameter'?");
  CHECK_FALSE(flags.apply("error=Nothing", error));
  CHECK(error == "-Werror=Nothing: unknown warning 'Nothing'");
  CHECK_FALSE(flags.apply("no-Deadlock", error));
  CHECK(error == "-Wno-Deadlock: 'Deadlock' is an error, not a warning; only warnings can be "
                 "turned off or made errors");
  CHECK_FALSE(flags.apply("", error));
}

TEST_CASE("the engine drops, promotes or exempts warnings as the policy says", "[warnings]") {
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources);
  diags.setWarningPolicy(
      flagsFrom({"no-UnusedLet", "error=ShadowedName", "no-error=UnusedParameter"}).policy);
  diags.report(DiagKind::UnusedLet, "dropped");
  CHECK(diags.reportOnce(DiagKind::UnusedLet, {}, "dropped") == nullptr);
  CHECK(diags.reportOnce(DiagKind::UnusedLet, {}, "dropped") == nullptr);
  diags.report(DiagKind::ShadowedName, "promoted");
  diags.report(DiagKind::UnusedParameter, "exempt");
  diags.report(DiagKind::DuplicateCost, "plain");
  REQUIRE(diags.diagnostics().size() == 3);
  CHECK(diags.diagnostics()[0].severity == Severity::Error);
  CHECK(diags.diagnostics()[1].severity == Severity::Warning);
  CHECK(diags.errorCount() == 1);
  CHECK(diags.warningCount() == 2);
  CHECK(diags.werrorWarningCount() == 1); // DuplicateCost; UnusedParameter is exempt
  CHECK(kindNamed("UnusedLet") == DiagKind::UnusedLet);
}
