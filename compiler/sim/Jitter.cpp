#include "sim/Jitter.h"

#include "sim/SimOutputs.h"

#include "llvm/ADT/StringRef.h"

namespace pipec {

std::string JitterSpec::describe() const {
  switch (kind) {
  case Kind::None: return "none";
  case Kind::LogNormal: return "lognormal CV " + formatNumber(cv);
  case Kind::Normal: return "normal CV " + formatNumber(cv);
  case Kind::Trace:
    return "trace " + traceFile + " (" + std::to_string(pooled.size()) + " measured ops)";
  }
  return "none";
}

std::optional<JitterSpec> parseJitter(const std::string &text, std::string &error) {
  auto [name, value] = llvm::StringRef(text).split(':');
  JitterSpec spec;
  if (name == "trace") {
    if (value.empty()) {
      error = "--jitter trace: expects a file, as trace:FILE";
      return std::nullopt;
    }
    spec.kind = JitterSpec::Kind::Trace;
    spec.traceFile = value.str();
    return spec;
  }
  if (name != "lognormal" && name != "normal") {
    error = "--jitter expects lognormal:CV, normal:CV or trace:FILE, got '" + text + "'";
    return std::nullopt;
  }
  spec.kind = name == "lognormal" ? JitterSpec::Kind::LogNormal : JitterSpec::Kind::Normal;
  double cv;
  if (value.trim().getAsDouble(cv) || !std::isfinite(cv) || cv < 0) {
    error = "--jitter " + name.str() + ": expects a coefficient of variation, a finite number "
            "of at least 0 (0.1 for 10%), got '" + value.str() + "'";
    return std::nullopt;
  }
  spec.cv = cv == 0 ? 0.0 : cv; // -0 is 0
  return spec;
}

JitterSampler::JitterSampler(const JitterSpec &spec) : spec_(spec) {
  if (spec.kind == JitterSpec::Kind::LogNormal) {
    double variance = std::log1p(spec.cv * spec.cv);
    sigma_ = std::sqrt(variance);
    halfVariance_ = variance / 2;
  }
}

} // namespace pipec
