// The optimizer's arithmetic against values computed by hand, and the global
// norm clipping factor.
#include "pipert/Optimizer.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace pipert;

namespace {

struct OneWeight {
  Tensor<double> value{1, 1, 1.0}, grad{1, 1, 0.5};
  StageOptimizerState<double> state;
  double step(const OptimizerConfig &config, int64_t n, double scale = 1.0) {
    std::vector<Parameter<double>> params{{"w", &value, &grad}};
    optimizerStep(config, n, scale, params, state);
    return value[0];
  }
};

} // namespace

TEST_CASE("SGD steps by lr times the gradient, with L2 decay and momentum", "[runtime][optimizer]") {
  OptimizerConfig sgd;
  sgd.lr = 0.1;
  CHECK(OneWeight().step(sgd, 1) == Approx(0.95).epsilon(1e-15));
  sgd.weightDecay = 0.1; // g + wd * w = 0.6
  CHECK(OneWeight().step(sgd, 1) == Approx(0.94).epsilon(1e-15));
  sgd.weightDecay = 0;
  sgd.momentum = 0.9; // buffer 0.5, then 0.9 * 0.5 + 0.5 = 0.95
  OneWeight w;
  CHECK(w.step(sgd, 1) == Approx(0.95).epsilon(1e-15));
  CHECK(w.step(sgd, 2) == Approx(0.855).epsilon(1e-15));
  CHECK(w.state.parameters[0].first[0] == Approx(0.95).epsilon(1e-15));
}

TEST_CASE("AdamW corrects the moments' bias and decays the weight apart from them", "[runtime][optimizer]") {
  OptimizerConfig adam;
  adam.kind = OptimizerKind::AdamW;
  adam.lr = 0.1;
  adam.weightDecay = 0.01;
  OneWeight w;
  // Step 1: m = 0.05, v = 0.00025; corrected 0.5 and 0.25: update 0.5 / (0.5 + eps).
  double update = 0.5 / (0.5 + 1e-8);
  CHECK(w.step(adam, 1) == Approx(1 - 0.1 * (update + 0.01)).epsilon(1e-14));
  CHECK(w.state.parameters[0].first[0] == Approx(0.05).epsilon(1e-14));
  CHECK(w.state.parameters[0].second[0] == Approx(0.00025).epsilon(1e-14));
  // Step 2, the same gradient: corrected moments are again 0.5 and 0.25.
  double after1 = 1 - 0.1 * (update + 0.01);
  CHECK(w.step(adam, 2) == Approx(after1 - 0.1 * (update + 0.01 * after1)).epsilon(1e-14));
}

TEST_CASE("the gradient scale (clipping) multiplies the gradient before the step", "[runtime][optimizer]") {
  OptimizerConfig sgd;
  sgd.lr = 0.1;
  CHECK(OneWeight().step(sgd, 1, 0.5) == Approx(0.975).epsilon(1e-15));
  sgd.clipGradNorm = 1;
  CHECK(clipFactor(sgd, 2.0) == 0.5);
  CHECK(clipFactor(sgd, 0.5) == 1.0);
  CHECK(clipFactor(sgd, 0.0) == 1.0);
  sgd.clipGradNorm = 0;
  CHECK(clipFactor(sgd, 100.0) == 1.0);
  Tensor<double> a(1, 2), ga(1, 2);
  ga[0] = 3;
  ga[1] = 4;
  std::vector<Parameter<double>> params{{"a", &a, &ga}};
  CHECK(gradientSquares(params) == 25.0);
}

TEST_CASE("invalid optimizer settings name the option", "[runtime][optimizer]") {
  OptimizerConfig c;
  CHECK(validateOptimizer(c).empty());
  c.lr = NAN;
  CHECK(validateOptimizer(c).find("--lr") != std::string::npos);
  c.lr = 0.1;
  c.weightDecay = -1;
  CHECK(validateOptimizer(c).find("--weight-decay") != std::string::npos);
  c.weightDecay = 0;
  c.clipGradNorm = INFINITY;
  CHECK(validateOptimizer(c).find("--clip-grad-norm") != std::string::npos);
  c.clipGradNorm = 0;
  c.momentum = 1;
  CHECK(validateOptimizer(c).find("--momentum") != std::string::npos);
  OneWeight w;
  CHECK_THROWS_AS(w.step(c, 0), std::invalid_argument);
}
