// OptionParser (see pipert/OptionTable.h).
#include "pipert/OptionTable.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace pipert {

namespace {

std::vector<std::string> choicesOf(const OptionSpec &spec) {
  std::vector<std::string> out;
  std::string word;
  for (const char *c = spec.valueName;; ++c) {
    if (*c == '|' || *c == '\0') {
      out.push_back(word);
      word.clear();
      if (*c == '\0')
        return out;
    } else {
      word += *c;
    }
  }
}

// "a, b or c"
std::string listOf(const std::vector<std::string> &words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i)
    out += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return out;
}

// Whole numbers in full ("1000000"), others in their shortest exact form.
std::string formatNumber(double x) {
  char buffer[32];
  if (x == std::floor(x) && std::fabs(x) < 1e19) {
    std::snprintf(buffer, sizeof buffer, "%.0f", x);
    return buffer;
  }
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, x);
    if (std::strtod(buffer, nullptr) == x)
      break;
  }
  return buffer;
}

std::string usageOf(const OptionSpec &spec) {
  std::string usage = std::string("--") + spec.name;
  if (spec.kind != OptionKind::Flag)
    usage += std::string(" ") + spec.valueName;
  return usage;
}

// What --help adds after an option's own text: its range and default.
std::string generatedHelp(const OptionSpec &spec) {
  std::vector<std::string> parts;
  if (spec.kind == OptionKind::Integer)
    parts.push_back(formatNumber(spec.min) + " to " + formatNumber(spec.max));
  if (spec.defaultValue)
    parts.push_back(std::string("default ") + spec.defaultValue);
  if (spec.kind == OptionKind::Number && std::isfinite(spec.max))
    parts.push_back("at most " + formatNumber(spec.max) + ": larger values, inf included, mean " +
                    formatNumber(spec.max));
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i)
    out += (i ? "; " : " (") + parts[i];
  return parts.empty() ? out : out + ")";
}

} // namespace

const OptionValues::Value &OptionValues::at(const std::string &name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    throw std::logic_error("no option --" + name + " in the table");
  return it->second;
}

bool OptionValues::given(const std::string &name) const { return at(name).given; }
bool OptionValues::flag(const std::string &name) const { return at(name).set; }
int64_t OptionValues::integer(const std::string &name) const { return at(name).integer; }
double OptionValues::number(const std::string &name) const { return at(name).number; }
const std::string &OptionValues::text(const std::string &name) const { return at(name).text; }

OptionParser::OptionParser(std::vector<OptionSpec> table, std::string epilogue)
    : table_(std::move(table)), epilogue_(std::move(epilogue)) {
  // A default is parsed like a typed value: a table with a bad one is a bug.
  OptionValues check;
  for (const OptionSpec &spec : table_)
    if (spec.defaultValue && spec.kind != OptionKind::Flag && !store(spec, spec.defaultValue, check).empty())
      throw std::logic_error(std::string("bad default for --") + spec.name);
}

const OptionSpec *OptionParser::find(const std::string &arg) const {
  if (arg.size() < 3 || arg.compare(0, 2, "--") != 0)
    return nullptr;
  for (const OptionSpec &spec : table_)
    if (arg.compare(2, std::string::npos, spec.name) == 0)
      return &spec;
  return nullptr;
}

std::string OptionParser::store(const OptionSpec &spec, const std::string &text,
                                OptionValues &values) const {
  OptionValues::Value &value = values.values_[spec.name];
  std::string option = std::string("--") + spec.name;
  char *end = nullptr;
  errno = 0;
  switch (spec.kind) {
  case OptionKind::Flag:
    value.set = true;
    return "";
  case OptionKind::Integer: {
    long long n = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno == ERANGE || double(n) < spec.min || double(n) > spec.max)
      return option + " expects an integer from " + formatNumber(spec.min) + " to " +
             formatNumber(spec.max) + ", not '" + text + "'";
    value.integer = n;
    break;
  }
  case OptionKind::Number: {
    double x = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(x > 0)) // rejects nan too
      return option + " expects a positive number, not '" + text + "'";
    value.number = std::min(x, spec.max);
    break;
  }
  case OptionKind::Choice: {
    std::vector<std::string> choices = choicesOf(spec);
    if (std::find(choices.begin(), choices.end(), text) == choices.end())
      return option + " expects " + listOf(choices) + ", not '" + text + "'";
    break;
  }
  case OptionKind::Text:
    if (text.empty())
      return option + " expects a non-empty " + spec.valueName;
    break;
  }
  value.text = text;
  value.set = true;
  return "";
}

bool OptionParser::fail(const std::string &message, int &status) const {
  std::fprintf(stderr, "error: %s\n(--help lists the options)\n", message.c_str());
  status = 2;
  return false;
}

bool OptionParser::parse(int argc, char **argv, OptionValues &values, int &status) const {
  values.values_.clear();
  for (const OptionSpec &spec : table_) {
    values.values_[spec.name];
    if (spec.defaultValue && spec.kind != OptionKind::Flag)
      store(spec, spec.defaultValue, values);
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(help().c_str(), stdout);
      status = 0;
      return false;
    }
    const OptionSpec *spec = find(arg);
    if (!spec)
      return fail("unknown option '" + arg + "'", status);
    std::string text;
    if (spec->kind != OptionKind::Flag) {
      if (i + 1 >= argc)
        return fail(arg + " needs a value (" + spec->valueName + ")", status);
      text = argv[++i];
    }
    std::string error = store(*spec, text, values);
    if (!error.empty())
      return fail(error, status);
    values.values_[spec->name].given = true;
  }
  return true;
}

std::string OptionParser::help() const {
  size_t width = 0;
  for (const OptionSpec &spec : table_)
    width = std::max(width, usageOf(spec).size());
  width += 2;
  std::string out = "options:\n";
  for (const OptionSpec &spec : table_) {
    std::string text = spec.help, extra = generatedHelp(spec);
    // The range and default go on a line of their own when the last is long.
    size_t newline = text.rfind('\n');
    size_t lastLine = newline == std::string::npos ? text.size() : text.size() - newline - 1;
    text += lastLine + extra.size() > 70 ? "\n" + extra.substr(1) : extra;
    std::string usage = usageOf(spec);
    out += "  " + usage + std::string(width - usage.size(), ' ');
    for (char c : text)
      out += c == '\n' ? "\n  " + std::string(width, ' ') : std::string(1, c);
    out += "\n";
  }
  return out + epilogue_;
}

} // namespace pipert
