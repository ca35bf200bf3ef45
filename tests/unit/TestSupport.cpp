#include "TestSupport.h"

#include "diag/DiagnosticRenderer.h"
#include "elab/IRPrinter.h"

#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

namespace pipec::test {

std::string readExample(const std::string &name) {
  std::ifstream in(std::string(PIPEC_EXAMPLES_DIR) + "/" + name + ".pipe");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

CheckedExample checkExample(const std::string &name, int P, int M) {
  CheckedExample c;
  ElabOptions options;
  options.defines = {{"P", P}, {"M", M}};
  c.compiled = compile(readExample(name), options);
  REQUIRE(c.compiled->ir);
  c.report = runChecks(*c.compiled->ir, CheckOptions{}, c.compiled->diags);
  REQUIRE(c.report.ok);
  return c;
}

plan::ModelConfig parseModelText(const std::string &json) {
  std::string error;
  std::optional<plan::ModelConfig> config = plan::parseModelConfig(json, "model.json", error);
  INFO(error);
  REQUIRE(config);
  return *config;
}

plan::Cluster roundCluster(int64_t gpus) {
  plan::Cluster c;
  c.name = "test";
  c.gpus = gpus;
  c.gpusPerNode = 8;
  c.memoryBytes = 80e9;
  c.peakFlops = 1e12;
  c.matmulEfficiency = 0.5;
  c.hbmBandwidth = 1e12;
  c.busEfficiency = 1;
  c.intraNodeBandwidth = 100e9;
  c.interNodeBandwidth = 10e9;
  c.intraNodeLatency = 1e-6;
  c.interNodeLatency = 1e-5;
  return c;
}

plan::PlanInputs h100Inputs(const std::string &hfFile, int64_t gpus) {
  std::string error;
  plan::PlanInputs inputs;
  std::optional<plan::ModelConfig> config =
      plan::readModelConfig(std::string(PIPEC_PLAN_INPUTS_DIR "/hf/") + hfFile, error);
  INFO(error);
  REQUIRE(config);
  inputs.config = *config;
  // The training's default runs the config's MTP modules, as `pipec plan` does.
  inputs.model = plan::buildLayers(inputs.config,
                                   plan::trainedMtpModules(plan::Training{}, inputs.config.nextnPredictLayers));
  inputs.cluster = *plan::clusterPreset("h100");
  inputs.cluster.gpus = gpus;
  return inputs;
}

Compiled::Compiled(std::unique_ptr<Compilation> compilation)
    : compilation(std::move(compilation)), sources(this->compilation->sources()),
      diags(this->compilation->diags()) {}

bool Compiled::has(DiagKind kind) const {
  for (const Diagnostic &d : diags.diagnostics())
    if (d.kind == kind)
      return true;
  return false;
}

std::string Compiled::renderedDiagnostics() const {
  std::string text;
  llvm::raw_string_ostream out(text);
  renderText(diags, out, false);
  return out.str();
}

std::string Compiled::ir_text() const {
  std::string text;
  llvm::raw_string_ostream out(text);
  if (ir)
    printIR(*ir, out);
  return out.str();
}

std::unique_ptr<Compiled> compile(const std::string &source, const ElabOptions &options) {
  auto c = std::make_unique<Compiled>(Compilation::fromText("test.pipe", source));
  c->compilation->runFrontEnd(options);
  c->ast = c->compilation->ast();
  c->ir = c->compilation->ir();
  return c;
}

std::string withBody(const std::string &body, int P, int M) {
  return "schedule t(P = " + std::to_string(P) + ", M = " + std::to_string(M) +
         ") {\n  ranks P; stages P; microbatches M;\n  place stage s -> rank s;\n  rank r {\n" +
         body + "\n  }\n}\n";
}

} // namespace pipec::test
