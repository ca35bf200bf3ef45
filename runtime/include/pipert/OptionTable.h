// The command line of an emitted program, as a table: each option's name, the
// kind of value it takes, its range, its default and its help. One parser serves
// the CPU and the CUDA programs: it prints --help from the table and rejects a
// bad value with a message naming the option and what it expects (exit 2).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pipert {

enum class OptionKind {
  Flag,    // no value
  Integer, // a whole number in [min, max]
  Number,  // a positive number; above max (inf included) it is taken as max
  Choice,  // one of the words in valueName, "mlp|moe|empty"
  Text,    // any non-empty text (a file name)
};

struct OptionSpec {
  const char *name;         // "steps" for --steps
  OptionKind kind;
  const char *valueName;    // "N", "FILE"; for Choice the choices, separated by '|'
  const char *defaultValue; // as it would be typed; nullptr: none (a Flag is off)
  double min, max;          // Integer: the range; Number: max only
  const char *help;         // '\n' starts a continuation line
};

// The values after parsing: every option of the table, given or defaulted.
class OptionValues {
public:
  bool given(const std::string &name) const; // on the command line
  bool flag(const std::string &name) const;
  int64_t integer(const std::string &name) const;
  double number(const std::string &name) const;
  const std::string &text(const std::string &name) const; // Choice or Text; "" when unset

private:
  friend class OptionParser;
  struct Value {
    bool given = false, set = false;
    int64_t integer = 0;
    double number = 0;
    std::string text;
  };
  const Value &at(const std::string &name) const;
  std::map<std::string, Value> values_;
};

class OptionParser {
public:
  // `epilogue` follows the options in --help (exit statuses, notes).
  OptionParser(std::vector<OptionSpec> table, std::string epilogue = "");

  // Parses argv. Returns true to run; false after --help (status 0) or an error
  // (printed to stderr, status 2).
  bool parse(int argc, char **argv, OptionValues &values, int &status) const;

  // A check across options, after parse: prints the error and sets status 2.
  bool fail(const std::string &message, int &status) const;

  std::string help() const;

private:
  const OptionSpec *find(const std::string &arg) const;
  // Empty when `text` is a valid value of `spec`, else what the option expects.
  std::string store(const OptionSpec &spec, const std::string &text, OptionValues &values) const;

  std::vector<OptionSpec> table_;
  std::string epilogue_;
};

} // namespace pipert
