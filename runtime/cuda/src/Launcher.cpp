#include "Launcher.h"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace pipert::cuda {

namespace {

// A number the environment or a flag gave, in [0, 2^20].
int parseCount(const std::string &what, const char *text) {
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (!*text || *end != '\0' || errno != 0 || value < 0 || value > (1 << 20))
    throw std::runtime_error(what + " is '" + text + "', not a non-negative integer");
  return int(value);
}

// A variable's value, or nullptr when it is unset or empty.
const char *variable(const Environment &env, const char *name) {
  const char *text = env(name);
  return text && *text ? text : nullptr;
}

int required(const Environment &env, const char *name, const char *launcher) {
  const char *text = variable(env, name);
  if (!text)
    throw std::runtime_error(std::string("$") + name + " is not set (" + launcher +
                             " sets it with the rank's variable)");
  return parseCount(std::string("$") + name, text);
}

// The launchers in precedence order: where each keeps rank, size and local rank.
struct LauncherVariables {
  const char *name, *rank, *size, *localRank;
};
constexpr LauncherVariables kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
};

const LauncherVariables *detectLauncher(const Environment &env) {
  for (const LauncherVariables &l : kLaunchers)
    if (variable(env, l.rank) || variable(env, l.size))
      return &l;
  return nullptr;
}

// One bracket's ranges, "01-04,07": each a low and high value and the width
// of the low one as written (zero padding is kept).
struct Range {
  unsigned long long low, high;
  size_t width;
};
// A host pattern: literal text and bracket groups, one after the other.
struct Part {
  std::string text;          // literal, when ranges is empty
  std::vector<Range> ranges; // a bracket group
};

[[noreturn]] void badList(const std::string &list, const std::string &why) {
  throw std::runtime_error("cannot read the Slurm node list '" + list + "': " + why);
}

std::vector<Range> parseRanges(const std::string &list, const std::string &inside) {
  std::vector<Range> ranges;
  size_t i = 0;
  auto number = [&](size_t &width) {
    size_t start = i;
    while (i < inside.size() && inside[i] >= '0' && inside[i] <= '9')
      ++i;
    width = i - start;
    if (width == 0 || width > 18)
      badList(list, "expected a number in [" + inside + "]");
    return std::stoull(inside.substr(start, width));
  };
  for (;;) {
    Range r{};
    size_t highWidth = 0;
    r.low = r.high = number(r.width);
    if (i < inside.size() && inside[i] == '-') {
      ++i;
      r.high = number(highWidth);
      if (r.high < r.low)
        badList(list, "range " + std::to_string(r.low) + "-" + std::to_string(r.high) +
                          " runs backwards");
    }
    ranges.push_back(r);
    if (i == inside.size())
      return ranges;
    if (inside[i] != ',')
      badList(list, "unexpected '" + std::string(1, inside[i]) + "' in [" + inside + "]");
    ++i;
  }
}

std::vector<Part> parsePattern(const std::string &list, const std::string &item) {
  std::vector<Part> parts;
  size_t i = 0;
  while (i < item.size()) {
    if (item[i] == '[') {
      size_t close = item.find(']', i);
      if (close == std::string::npos)
        badList(list, "'[' without ']'");
      parts.push_back({"", parseRanges(list, item.substr(i + 1, close - i - 1))});
      i = close + 1;
    } else if (item[i] == ']') {
      badList(list, "']' without '['");
    } else {
      size_t next = item.find_first_of("[]", i);
      if (next == std::string::npos)
        next = item.size();
      parts.push_back({item.substr(i, next - i), {}});
      i = next;
    }
  }
  if (parts.empty())
    badList(list, "an empty host name");
  return parts;
}

std::string padded(unsigned long long value, size_t width) {
  std::string digits = std::to_string(value);
  return std::string(width > digits.size() ? width - digits.size() : 0, '0') + digits;
}

// Appends the hosts of one pattern, leftmost bracket varying slowest.
void expandPattern(const std::vector<Part> &parts, size_t k, const std::string &prefix,
                   std::vector<std::string> &out, size_t limit) {
  if (out.size() >= limit)
    return;
  if (k == parts.size()) {
    out.push_back(prefix);
    return;
  }
  if (parts[k].ranges.empty())
    return expandPattern(parts, k + 1, prefix + parts[k].text, out, limit);
  for (const Range &r : parts[k].ranges)
    for (unsigned long long v = r.low; out.size() < limit; ++v) {
      expandPattern(parts, k + 1, prefix + padded(v, r.width), out, limit);
      if (v == r.high)
        break;
    }
}

} // namespace

Environment processEnvironment() {
  return [](const char *name) -> const char * { return std::getenv(name); };
}

std::vector<std::string> expandNodeList(const std::string &list, size_t limit) {
  // The whole list is read first, so a malformed one is an error even where
  // only its first host is wanted.
  std::vector<std::vector<Part>> patterns;
  size_t start = 0, depth = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size() && list[i] == '[')
      ++depth;
    else if (i < list.size() && list[i] == ']' && depth > 0)
      --depth;
    else if (i == list.size() || (list[i] == ',' && depth == 0)) {
      patterns.push_back(parsePattern(list, list.substr(start, i - start)));
      start = i + 1;
    }
  }
  std::vector<std::string> hosts;
  for (const std::vector<Part> &pattern : patterns)
    expandPattern(pattern, 0, "", hosts, limit);
  return hosts;
}

std::string firstHostOfNodeList(const std::string &list) {
  std::vector<std::string> first = expandNodeList(list, 1);
  if (first.empty())
    badList(list, "no host");
  return first[0];
}

bool launchedAsGroup(const LaunchFlags &flags, const Environment &env) {
  if (flags.worldSize >= 0 || flags.rank >= 0 || variable(env, "WORLD_SIZE"))
    return true;
  for (const char *size : {"SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"})
    if (const char *text = variable(env, size); text && std::strtol(text, nullptr, 10) > 1)
      return true;
  return false;
}

ProcessGroup resolveLaunch(const LaunchFlags &flags, const Environment &env) {
  ProcessGroup group;
  const LauncherVariables *launcher = detectLauncher(env);
  bool allFlags = flags.rank >= 0 && flags.worldSize >= 0;
  if (!launcher && !allFlags)
    throw std::runtime_error(
        "the NCCL transport needs to know this process's rank and the number of ranks: "
        "start it with torchrun (RANK, WORLD_SIZE), srun (SLURM_PROCID, SLURM_NTASKS) or "
        "mpirun (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE), or pass --rank and --world-size");
  group.launcher = launcher && !allFlags ? launcher->name : "flags";
  if (launcher) {
    group.rank = flags.rank >= 0 ? flags.rank : required(env, launcher->rank, launcher->name);
    group.worldSize =
        flags.worldSize >= 0 ? flags.worldSize : required(env, launcher->size, launcher->name);
    const char *local = variable(env, launcher->localRank);
    group.localRank = local ? parseCount(std::string("$") + launcher->localRank, local)
                            : group.rank;
  } else {
    group.rank = flags.rank;
    group.worldSize = flags.worldSize;
    group.localRank = group.rank;
  }
  if (flags.localRank >= 0)
    group.localRank = flags.localRank;
  if (group.worldSize < 1 || group.rank >= group.worldSize)
    throw std::runtime_error("rank " + std::to_string(group.rank) + " (from " + group.launcher +
                             ") is not below the world size " +
                             std::to_string(group.worldSize));

  if (!flags.masterAddr.empty())
    group.masterAddr = flags.masterAddr;
  else if (const char *addr = variable(env, "MASTER_ADDR"))
    group.masterAddr = addr;
  else if (launcher && std::string(launcher->name) == "Slurm") {
    const char *list = variable(env, "SLURM_STEP_NODELIST");
    if (!list)
      list = variable(env, "SLURM_JOB_NODELIST");
    if (list)
      group.masterAddr = firstHostOfNodeList(list);
  }
  if (flags.masterPort > 0)
    group.masterPort = flags.masterPort;
  else if (const char *port = variable(env, "MASTER_PORT"))
    group.masterPort = parseCount("$MASTER_PORT", port);
  else if (launcher && std::string(launcher->name) != "torchrun")
    group.masterPort = kDefaultMasterPort;
  if (group.masterPort > 65535)
    throw std::runtime_error("MASTER_PORT " + std::to_string(group.masterPort) +
                             " is not a TCP port");
  return group;
}

} // namespace pipert::cuda
