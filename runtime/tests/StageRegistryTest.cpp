// Stage providers: what the registry refuses, how --model finds a provider, the
// checks on the stages a provider builds, and a user's stages run by the
// executor on hand-written program tables, with the reference check and the
// peak activations compared with the tables' prediction.
#include "TestStages.h"
#include "TestPrograms.h"

#include "exec/RunOptions.h"

#include "pipert/Model.h"
#include "pipert/Program.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace pipert;
using namespace pipert::test;

namespace {

StageProvider provider(const std::string &name, StageMaker<double> makeDouble) {
  StageProvider p;
  p.name = name;
  p.description = "a test provider";
  p.makeDouble = std::move(makeDouble);
  return p;
}

std::unique_ptr<Stage<double>> square(const StageRequest &r) {
  return std::make_unique<TanhStage<double>>(r.hidden, r.hidden, r.init());
}

// What `f` wrote to stderr, and its return value.
std::string stderrOf(const std::function<int()> &f, int &result) { return outputOf(2, f, result); }

int runWith(const Program &program, std::vector<std::string> args) {
  return runTestProgram(program, std::move(args));
}

int parseStatus(std::vector<std::string> args) {
  args.insert(args.begin(), "program");
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  RunOptions options;
  int status = 0;
  return parseRunOptions(int(argv.size()), argv.data(), options, status) ? 0 : status;
}

// Registered once for the whole test binary (the registry lives as long as the program).
void registerTestProviders() {
  static bool done = [] {
    registerStageProvider(provider("test_square", square));
    registerStageProvider(provider("test_widening", makeWideningStage<double>));
    StageProvider both = provider("test_widening_both", makeWideningStage<double>);
    both.makeFloat = makeWideningStage<float>;
    registerStageProvider(both);
    StageProvider withPath = provider("test_needs_path", square);
    withPath.needsPath = true;
    registerStageProvider(withPath);
    registerStageProvider(provider("test_null", [](const StageRequest &) { return nullptr; }));
    registerStageProvider(provider("test_wrong_index", [](const StageRequest &r) {
      return std::make_unique<TanhStage<double>>(r.hidden, r.hidden, StageInit{r.seed, r.stageIndex + 1});
    }));
    return true;
  }();
  (void)done;
}


} // namespace

TEST_CASE("the registry refuses empty, built-in, malformed and duplicate names", "[runtime][stages]") {
  registerTestProviders();
  CHECK_THROWS_WITH(registerStageProvider(provider("", square)), Catch::Contains("empty name"));
  for (const char *builtin : {"mlp", "moe", "empty"})
    CHECK_THROWS_WITH(registerStageProvider(provider(builtin, square)),
                      Catch::Contains(std::string("'") + builtin + "' is a built-in model's"));
  CHECK_THROWS_WITH(registerStageProvider(provider("two words", square)),
                    Catch::Contains("may hold only letters, digits"));
  CHECK_THROWS_WITH(registerStageProvider(provider("test_square", square)),
                    Catch::Contains("stage provider 'test_square' is registered twice"));
  CHECK_THROWS_WITH(registerStageProvider(provider("test_no_makers", nullptr)),
                    Catch::Contains("builds no stages"));
  CHECK(findStageProvider("test_no_makers") == nullptr);
  CHECK(findStageProvider("test_square") != nullptr);
  std::vector<std::string> names = stageProviderNames();
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(stageRegistrationErrors().empty()); // refusals by the throwing call are not recorded
}

TEST_CASE("the model option selects a provider by name and an unknown name lists the registered ones", "[runtime][stages]") {
  registerTestProviders();
  CHECK(parseStatus({"--model", "test_square"}) == 0);
  int status = 0;
  std::string message = stderrOf([] { return parseStatus({"--model", "nope"}); }, status);
  CHECK(status == 2);
  CHECK_THAT(message, Catch::Contains("unknown --model 'nope' (this program has: mlp, moe, empty, ") && Catch::Contains(", test_square, "));
  CHECK_THAT(message, Catch::Contains(", test_null, test_square, test_widening, test_widening_both, test_wrong_index)"));
  message = stderrOf([] { return parseStatus({"--model", "test_needs_path"}); }, status);
  CHECK(status == 2);
  CHECK_THAT(message, Catch::Contains("--model test_needs_path needs --model-path"));
  message = stderrOf([] { return parseStatus({"--model", "mlp", "--model-path", "x"}); }, status);
  CHECK(status == 2);
  CHECK_THAT(message, Catch::Contains("--model-path is for a stage provider, not --model mlp"));
  CHECK(parseStatus({"--model", "test_square", "--ep", "2"}) == 2);
}

TEST_CASE("a provider's stages are checked when they are built", "[runtime][stages]") {
  registerTestProviders();
  StageRequest request;
  request.hidden = 4;
  request.seed = 1;
  auto model = [&](const char *name) { return providedModel(*findStageProvider(name), 3, request); };
  CHECK_THROWS_WITH(makeStage<double>(model("test_null"), 1),
                    Catch::Contains("stage provider 'test_null' built no stage 1 (null)"));
  CHECK_THROWS_WITH(makeStage<double>(model("test_wrong_index"), 1),
                    Catch::Contains("stage provider 'test_wrong_index' built stage 2 when asked for stage 1"));
  CHECK_THROWS_WITH(makeStage<float>(model("test_square"), 0),
                    Catch::Contains("stage provider 'test_square' has no fp32 stages"));
  CHECK_THROWS_WITH(makeStage<double>(model("test_square"), 3), Catch::Contains("outside a model of 3 stages"));
  // The request reaches the maker with the stage's index.
  std::unique_ptr<Stage<double>> last = makeStage<double>(model("test_widening"), 2);
  CHECK(last->stageIndex() == 2);
  CHECK(last->inputWidth() == 7);
  CHECK(last->outputWidth() == 4);
  // Identical requests give identical stages (replicated copies start alike).
  std::unique_ptr<Stage<double>> again = makeStage<double>(model("test_widening"), 2);
  for (size_t p = 0; p < last->parameters().size(); ++p)
    CHECK(last->parameters()[p].value->identical(*again->parameters()[p].value));
  // A program whose provider fails to build its stages stops with exit 2.
  CHECK(runWith(kOneFOneB, {"--model", "test_null", "--dtype", "fp64"}) == 2);
  CHECK(runWith(kOneFOneB, {"--model", "test_square"}) == 2); // no fp32 stages
}

TEST_CASE("parameters a provider's stage lists are checked", "[runtime][stages]") {
  struct Bad final : SimpleStage<double> {
    Bad(int variant) : SimpleStage<double>("bad", 2, StageInit{}), variant(variant) {}
    std::string describe() const override { return "bad"; }
    std::vector<Parameter<double>> parameters() override {
      if (variant == 0)
        return {{"w", &w, &w}, {"w", &w, &w}};
      if (variant == 1)
        return {{"w", &w, &wrong}};
      if (variant == 2)
        return {{"", &w, &w}};
      return {{"w", &w, nullptr}};
    }
    void computeForward(int, const Tensor<double> &, Tensor<double> &) override {}
    void computeInputGrad(int, const Tensor<double> &, Tensor<double> &) override {}
    void computeWeightGrad(int) override {}
    void releaseMicroBatch(int) override {}
    int variant;
    Tensor<double> w{2, 2}, wrong{2, 3};
  };
  const char *expected[] = {"has the name of parameter 0", "is 2x2 but its gradient is 2x3", "has no name",
                            "has no value or no gradient tensor"};
  for (int variant = 0; variant < 4; ++variant) {
    StageProvider p = provider("test_bad_parameters_" + std::to_string(variant), [variant](const StageRequest &) {
      return std::make_unique<Bad>(variant);
    });
    registerStageProvider(p);
    StageRequest request;
    request.hidden = 2;
    CHECK_THROWS_WITH(makeStage<double>(providedModel(*findStageProvider(p.name), 1, request), 0),
                      Catch::Contains(expected[variant]));
  }
}

TEST_CASE("a user's stages run a program: exact against the reference, peaks as predicted", "[runtime][stages]") {
  registerTestProviders();
  // Widths change between stages (hidden -> hidden+3 -> hidden): the executor
  // carries whatever each stage gives.
  for (const char *dtype : {"fp64", "fp32"}) {
    INFO(dtype);
    CHECK(runWith(kOneFOneB, {"--model", "test_widening_both", "--check", "--dtype", dtype, "--steps", "2"}) == 0);
    CHECK(runWith(kV, {"--model", "test_widening_both", "--check", "--dtype", dtype, "--steps", "2"}) == 0);
  }
  CHECK(runWith(kV, {"--model", "test_widening", "--check", "--dtype", "fp64", "--optimizer", "adamw"}) == 0);
  // The user's stages are counted as the built-in ones: a wrong prediction fails.
  const int64_t wrongPeaks[] = {2};
  Program wrong = kV;
  wrong.predictedPeakActivations = wrongPeaks;
  CHECK(runWith(wrong, {"--model", "test_widening", "--dtype", "fp64"}) == 1);
}
