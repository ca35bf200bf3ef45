// Line diff by longest common subsequence over the lines that differ between the
// common head and tail. Past kMaxCells table cells the changed middle is shown
// as one replacement: a correct diff, just not a minimal one, and bounded memory.
#include "formatter/UnifiedDiff.h"

#include <algorithm>
#include <vector>

namespace pipec::formatter {

namespace {

constexpr size_t kMaxCells = size_t(4) << 20;
constexpr size_t kContext = 3;

// The lines without their "\n". A last line without one carries diff's marker,
// so that it differs from the same line ended, and says so when printed.
std::vector<std::string> linesOf(llvm::StringRef text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    size_t end = text.find('\n');
    if (end == llvm::StringRef::npos) {
      lines.push_back(text.str() + "\n\\ No newline at end of file");
      break;
    }
    lines.push_back(text.take_front(end).str());
    text = text.drop_front(end + 1);
  }
  return lines;
}

// One line of the edit script: ' ' kept, '-' removed, '+' added.
struct Edit {
  char op;
  size_t a, b; // line indices in before / after (the current positions)
};

std::vector<Edit> editScript(const std::vector<std::string> &a,
                             const std::vector<std::string> &b) {
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head])
    ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
    ++tail;
  size_t n = a.size() - head - tail, m = b.size() - head - tail;
  std::vector<Edit> edits;
  for (size_t i = 0; i < head; ++i)
    edits.push_back({' ', i, i});
  if (n * m <= kMaxCells && n > 0 && m > 0) {
    // lcs[i][j]: common length of a[head+i..] and b[head+j..]
    std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
    auto at = [&](size_t i, size_t j) -> uint32_t & { return lcs[i * (m + 1) + j]; };
    for (size_t i = n; i-- > 0;)
      for (size_t j = m; j-- > 0;)
        at(i, j) = a[head + i] == b[head + j] ? at(i + 1, j + 1) + 1
                                              : std::max(at(i + 1, j), at(i, j + 1));
    size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[head + i] == b[head + j]) {
        edits.push_back({' ', head + i++, head + j++});
      } else if (j == m || (i < n && at(i + 1, j) >= at(i, j + 1))) {
        edits.push_back({'-', head + i++, head + j});
      } else {
        edits.push_back({'+', head + i, head + j++});
      }
    }
  } else {
    for (size_t i = 0; i < n; ++i)
      edits.push_back({'-', head + i, head});
    for (size_t j = 0; j < m; ++j)
      edits.push_back({'+', head + n, head + j});
  }
  for (size_t i = 0; i < tail; ++i)
    edits.push_back({' ', head + n + i, head + m + i});
  return edits;
}

} // namespace

std::string unifiedDiff(llvm::StringRef before, llvm::StringRef after, llvm::StringRef path) {
  if (before == after)
    return "";
  std::vector<std::string> a = linesOf(before), b = linesOf(after);
  std::vector<Edit> edits = editScript(a, b);
  std::string diff = "--- " + path.str() + "\n+++ " + path.str() + "\n";
  for (size_t k = 0; k < edits.size();) {
    if (edits[k].op == ' ') {
      ++k;
      continue;
    }
    // A hunk: from kContext lines before this change to kContext after the last
    // change that is at most 2*kContext kept lines further on.
    size_t first = k >= kContext ? k - kContext : 0;
    size_t last = k;
    for (size_t j = k; j < edits.size(); ++j) {
      if (edits[j].op != ' ')
        last = j;
      else if (j - last > 2 * kContext)
        break;
    }
    size_t end = std::min(edits.size(), last + kContext + 1);
    size_t countA = 0, countB = 0;
    for (size_t j = first; j < end; ++j) {
      countA += edits[j].op != '+';
      countB += edits[j].op != '-';
    }
    auto start = [](size_t line, size_t count) { return count ? line + 1 : line; };
    diff += "@@ -" + std::to_string(start(edits[first].a, countA)) + "," +
            std::to_string(countA) + " +" + std::to_string(start(edits[first].b, countB)) +
            "," + std::to_string(countB) + " @@\n";
    for (size_t j = first; j < end; ++j) {
      diff += edits[j].op;
      diff += edits[j].op == '+' ? b[edits[j].b] : a[edits[j].a];
      diff += "\n";
    }
    k = end;
  }
  return diff;
}

} // namespace pipec::formatter
