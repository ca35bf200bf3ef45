#include "exec/RunOptions.h"

#include "pipert/ExitStatus.h"
#include "pipert/SharedOptions.h"
#include "pipert/StageRegistry.h"

#include <cmath>
#include <cstdlib>

namespace pipert {

// The CPU program's own options; the rest are shared with the CUDA program.
static const OptionParser &parser() {
  using K = OptionKind;
  static const OptionParser table(withOwnOptions({
      {"micro-batch-size", K::Integer, "N", "1", 1, 1 << 16, "sequences per micro-batch"},
      {"dtype", K::Choice, "fp32|fp64", "fp32", 0, 0, "precision"},
      {"ep", K::Choice, "1|2|4", "1", 0, 0,
       "expert parallelism: as many pipeline replicas (threads), each\nwith its own data; MoE experts sharded over them"},
      {"drop-message", K::Integer, "ID", nullptr, 0, double(1LL << 40),
       "testing only: never send message ID"},
      {"max-memory", K::Number, "BYTES", nullptr, 1, 1e18,
       "refuse sizes whose buffers would need more (default: the machine's\nmemory, or 3/4 of the address-space limit when one is set)"},
      {"stream-threads", K::Flag, nullptr, nullptr, 0, 0,
       "run every stream on its own thread (default: one thread per rank\nruns whichever of its streams can move)"},
      // Training.
      {"optimizer", K::Choice, "sgd|adamw", "sgd", 0, 0, "the step after gradient sync"},
      {"lr", K::Text, "X", "0.01", 0, 0, "learning rate"},
      {"momentum", K::Text, "X", "0", 0, 0, "SGD momentum, in [0, 1)"},
      {"weight-decay", K::Text, "X", "0", 0, 0,
       "weight decay (SGD: L2 in the gradient; AdamW: decoupled)"},
      {"clip-grad-norm", K::Text, "X", "0", 0, 0,
       "clip gradients to this global norm over all stages (0: off)"},
      {"data", K::Text, "FILE", nullptr, 0, 0,
       "token ids, a flat binary (nanoGPT style); default synthetic data"},
      {"data-dtype", K::Choice, "uint16|uint32", "uint16", 0, 0, "element type of --data"},
      {"save", K::Text, "DIR", nullptr, 0, 0,
       "after the last step, write parameters and optimizer state to DIR"},
      {"load", K::Text, "DIR", nullptr, 0, 0,
       "resume from the checkpoint in DIR: --steps more steps"},
      // Comparison with the CUDA program.
      {"no-attention", K::Flag, "", nullptr, 0, 0,
       "stages without attention, the model the CUDA program runs"},
      // Language models.
      {"loss", K::Choice, "mse|cross-entropy", "mse", 0, 0,
       "cross-entropy: inputs are token ids (tokens x 1), targets the next\nids, the last stage gives logits (tokens x vocabulary)"},
      {"vocab", K::Integer, "N", nullptr, 1, double(1 << 24),
       "vocabulary size: synthetic token ids below N (cross-entropy\nwithout --data), or a bound --data's ids are checked against"},
  }),
      "exit status: 0 ok; 1 check failed (loss, gradients or peak activations differ from\n"
      "the reference or the prediction); 2 bad usage, invalid program table or I/O error;\n"
      "3 the watchdog fired (no progress for --timeout); 4 a rank failed (a runtime error,\n"
      "e.g. a message delivered out of order)\n");
  return table;
}

// A real number as typed, finite; the optimizer's own checks follow.
static bool parseReal(const OptionValues &v, const char *name, double &out, int &status) {
  const std::string &text = v.text(name);
  char *end = nullptr;
  out = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(out))
    return parser().fail(std::string("--") + name + " expects a finite number, not '" + text + "'",
                         status);
  return true;
}

static bool parseTrainingOptions(const OptionValues &v, RunOptions &o, int &status) {
  OptimizerConfig &c = o.optimizer;
  c.kind = v.text("optimizer") == "adamw" ? OptimizerKind::AdamW : OptimizerKind::Sgd;
  if (!parseReal(v, "lr", c.lr, status) || !parseReal(v, "momentum", c.momentum, status) ||
      !parseReal(v, "weight-decay", c.weightDecay, status) ||
      !parseReal(v, "clip-grad-norm", c.clipGradNorm, status))
    return false;
  if (std::string problem = validateOptimizer(c); !problem.empty())
    return parser().fail(problem, status);
  if (c.kind == OptimizerKind::AdamW && c.momentum != 0)
    return parser().fail("--momentum is for --optimizer sgd (AdamW has its own moments)", status);
  o.dataPath = v.text("data");
  o.dataBytes = v.text("data-dtype") == "uint32" ? 4 : 2;
  o.savePath = v.text("save");
  o.loadPath = v.text("load");
  o.loss = v.text("loss") == "cross-entropy" ? LossKind::CrossEntropy : LossKind::Mse;
  o.vocab = v.given("vocab") ? int(v.integer("vocab")) : 0;
  if (o.loss == LossKind::CrossEntropy && o.dataPath.empty() && o.vocab == 0)
    return parser().fail("--loss cross-entropy without --data draws synthetic token ids: it needs --vocab N",
                         status);
  if (o.loss == LossKind::Mse && o.vocab != 0)
    return parser().fail("--vocab is for --loss cross-entropy", status);
  if (o.empty && (!o.savePath.empty() || !o.loadPath.empty() || !o.dataPath.empty()))
    return parser().fail("--model empty has no parameters or data: no --save, --load or --data",
                         status);
  return true;
}

// --model: a built-in model or a stage provider linked into this program.
static bool parseModel(const OptionValues &v, RunOptions &o, int &status) {
  std::vector<std::string> broken = stageRegistrationErrors();
  if (!broken.empty())
    return parser().fail("this program's stage providers did not register: " + broken.front(), status);
  const std::string &model = v.text("model");
  o.moe = model == "moe";
  o.empty = model == "empty";
  o.providerPath = v.text("model-path");
  if (model == "mlp" || o.moe || o.empty) {
    if (!o.providerPath.empty())
      return parser().fail("--model-path is for a stage provider, not --model " + model, status);
    return true;
  }
  const StageProvider *provider = findStageProvider(model);
  if (!provider) {
    std::string known = "mlp, moe, empty";
    for (const std::string &name : stageProviderNames())
      known += ", " + name;
    return parser().fail("unknown --model '" + model + "' (this program has: " + known + ")", status);
  }
  if (provider->needsPath && o.providerPath.empty())
    return parser().fail("--model " + model + " needs --model-path", status);
  o.provider = model;
  return true;
}

bool parseRunOptions(int argc, char **argv, RunOptions &o, int &status) {
  OptionValues v;
  if (!parser().parse(argc, argv, v, status))
    return false;
  o.steps = int(v.integer("steps"));
  o.hidden = int(v.integer("hidden"));
  o.seq = int(v.integer("seq"));
  o.microBatchSize = int(v.integer("micro-batch-size"));
  if (!parseModel(v, o, status))
    return false;
  o.ep = std::stoi(v.text("ep"));
  o.fp64 = v.text("dtype") == "fp64";
  o.check = v.flag("check");
  o.tracePath = v.text("trace");
  o.seed = uint64_t(v.integer("seed"));
  o.timeoutSeconds = v.number("timeout");
  o.dropMessage = v.given("drop-message") ? v.integer("drop-message") : -1;
  o.streamThreads = v.flag("stream-threads");
  o.tolerance = v.given("tolerance") ? v.number("tolerance") : -1;
  o.attention = !v.flag("no-attention");
  o.maxMemoryBytes = v.given("max-memory") ? v.number("max-memory") : 0;
  if (!parseTrainingOptions(v, o, status))
    return false;
  if (static_cast<long long>(o.seq) * o.microBatchSize > (1 << 24))
    return parser().fail("--seq times --micro-batch-size is too large (over 2^24 tokens)", status);
  if (!o.provider.empty() && o.ep > 1)
    return parser().fail("--ep shards the built-in MoE stages' experts; --model " + o.provider +
                             " is a user model",
                         status);
  if (o.loss == LossKind::CrossEntropy && o.provider.empty())
    return parser().fail("--loss cross-entropy trains a language model: the built-in stages take vectors, "
                         "not token ids (use --model NAME from a stage provider)",
                         status);
  if (o.empty && o.check)
    return parser().fail("--model empty does no work: there is nothing to --check", status);
  return true;
}

} // namespace pipert
