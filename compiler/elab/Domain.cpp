#include "elab/Domain.h"

#include "elab/Evaluator.h"
#include "sema/DomainOrder.h"
#include "sema/NameResolver.h"
#include "syntax/Parser.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <algorithm>

namespace pipec {

using namespace ast;

std::string parseParamDefine(llvm::StringRef text, ParamDefine &out) {
  auto [name, value] = text.split('=');
  bool validName = !name.empty() && (llvm::isAlpha(name[0]) || name[0] == '_') &&
                   name.find_if_not([](char c) { return llvm::isAlnum(c) || c == '_'; }) ==
                       llvm::StringRef::npos;
  out = ParamDefine{name.str(), text.str(), {}, {}};
  if (validName && value.contains("..")) {
    out.range = value.str();
    return "";
  }
  if (validName && value.contains(',')) {
    llvm::SmallVector<llvm::StringRef, 8> parts;
    value.split(parts, ',');
    for (llvm::StringRef part : parts) {
      long long number;
      if (part.trim().getAsInteger(10, number))
        return "-D expects NAME=v1,v2,... with integers, got '" + text.str() + "'";
      out.values.push_back(number);
    }
    llvm::sort(out.values);
    out.values.erase(std::unique(out.values.begin(), out.values.end()), out.values.end());
    return "";
  }
  long long number;
  if (!validName || value.empty() || value.getAsInteger(10, number))
    return "-D expects NAME=INTEGER, got '" + text.str() + "'";
  out.values.push_back(number);
  return "";
}

std::string ParameterDomain::description() const {
  std::string text;
  for (const DomainAxis &axis : axes)
    text += (text.empty() ? "" : ", ") + axis.description;
  return text;
}

ParamValues ParameterDomain::valuesAt(size_t i) const {
  ParamValues values;
  for (size_t a = 0; a < axes.size(); ++a)
    values.emplace_back(names[a], points[i][a]);
  return values;
}

std::string ParameterDomain::describe(size_t i) const {
  std::string text;
  for (const auto &[name, value] : valuesAt(i))
    text += (text.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  return text;
}

ElabOptions ParameterDomain::optionsAt(size_t i, const ElabOptions &base) const {
  ElabOptions options = base;
  options.defines = valuesAt(i);
  return options;
}

namespace {

std::string sourceText(SMRange range) {
  return std::string(range.Start.getPointer(), range.End.getPointer());
}

// Walks the product depth first. Once past the limit it only counts (the last
// axis by its size, without visiting it), within a bounded amount of work.
class Enumerator {
public:
  Enumerator(const Schedule &schedule, ParameterDomain &domain, uint64_t maxPoints,
             DiagnosticEngine &diags)
      : schedule_(schedule), domain_(domain), maxPoints_(maxPoints), diags_(diags),
        env_(std::max(schedule.numVars, 1), 0), eval_(env_, diags),
        current_(domain.axes.size(), 0) {
    for (const Param &p : schedule.params)
      env_[p.var.id] = p.defaultValue;
  }

  bool run() {
    if (!walk(0))
      return false;
    if (!counting_)
      return true;
    domain_.points.clear();
    std::string count = (exact_ ? "" : "more than ") + std::to_string(count_);
    const DomainAxis &first = domain_.axes.front();
    diags_.report(DiagKind::TooManyPoints, first.at,
                  "checking schedule '" + schedule_.name + "' over " + domain_.description() +
                      " means " + count + " points, more than the limit of " +
                      std::to_string(maxPoints_))
        .note("narrow the domain with -D (e.g. -D " + domain_.names.front() +
              "=4 or -D " + domain_.names.front() + "=2..9) or raise the limit with --max-points");
    return false;
  }

private:
  static constexpr uint64_t kWorkLimit = 10'000'000; // values visited while counting

  bool walk(size_t i) {
    if (i == domain_.axes.size()) {
      if (!counting_)
        domain_.points.push_back(current_);
      ++count_;
      return true;
    }
    const DomainAxis &axis = domain_.axes[i];
    int64_t lo = 0, hi = 0, step = 1;
    std::vector<int64_t> list;
    if (!valuesOf(axis, lo, hi, step, list))
      return false;
    uint64_t size = axis.lo ? (uint64_t(hi) - uint64_t(lo) - 1) / uint64_t(step) + 1 : list.size();
    bool last = i + 1 == domain_.axes.size();
    if (last && (counting_ || count_ + size > maxPoints_)) {
      startCounting();
      count_ = count_ + size < count_ ? UINT64_MAX : count_ + size;
      return true;
    }
    for (uint64_t k = 0; k < size; ++k) {
      if (counting_ && ++work_ > kWorkLimit) {
        exact_ = false;
        return true;
      }
      int64_t value = axis.lo ? int64_t(uint64_t(lo) + k * uint64_t(step)) : list[k];
      env_[schedule_.params[axis.param].var.id] = value;
      current_[i] = value;
      if (!walk(i + 1))
        return false;
      if (!counting_ && count_ > maxPoints_)
        startCounting();
    }
    return true;
  }

  void startCounting() {
    if (counting_)
      return;
    counting_ = true;
    domain_.points.clear();
    domain_.points.shrink_to_fit();
  }

  bool valuesOf(const DomainAxis &axis, int64_t &lo, int64_t &hi, int64_t &step,
                std::vector<int64_t> &list) {
    const std::string &name = schedule_.params[axis.param].var.name;
    if (axis.lo) {
      if (!eval_.eval(*axis.lo, lo) || !eval_.eval(*axis.hi, hi))
        return false;
      if (axis.step) {
        if (!eval_.eval(*axis.step, step))
          return false;
        if (step < 1) {
          auto &d = diags_.report(DiagKind::DomainStepNotPositive, axis.step->range,
                                  "the domain of '" + name + "' steps by " +
                                      std::to_string(step) + "; a step must be at least 1");
          if (std::string names = eval_.describeNames(*axis.step); !names.empty())
            d.note("with " + names);
          return false;
        }
      }
      if (lo < hi)
        return true;
      std::string values;
      for (const Expr *bound : {axis.lo, axis.hi}) {
        std::string names = eval_.describeNames(*bound);
        if (!names.empty() && values.find(names) == std::string::npos)
          values += (values.empty() ? "" : ", ") + names;
      }
      auto &d = diags_.report(DiagKind::EmptyDomain, axis.at,
                              "the domain of '" + name + "' is empty: " +
                                  sourceText({axis.lo->range.Start, axis.hi->range.End}) +
                                  " is " + std::to_string(lo) + ".." + std::to_string(hi));
      if (!values.empty())
        d.note("with " + values);
      d.note("a range A..B is half-open: it holds A to B-1, so B must be above A");
      return false;
    }
    list = axis.values;
    for (const Expr *item : axis.items) {
      int64_t value;
      if (!eval_.eval(*item, value))
        return false;
      list.push_back(value);
    }
    llvm::sort(list);
    list.erase(std::unique(list.begin(), list.end()), list.end());
    return true;
  }

  const Schedule &schedule_;
  ParameterDomain &domain_;
  uint64_t maxPoints_;
  DiagnosticEngine &diags_;
  std::vector<int64_t> env_;
  Evaluator eval_;
  std::vector<int64_t> current_;
  uint64_t count_ = 0, work_ = 0;
  bool counting_ = false, exact_ = true;
};

// The -D that names no parameter: the same diagnostic the elaborator gives.
void reportUnknownParameter(const Schedule &schedule, const ParamDefine &define,
                            DiagnosticEngine &diags) {
  std::string known;
  std::vector<llvm::StringRef> names;
  for (const Param &p : schedule.params) {
    known += (known.empty() ? "" : ", ") + p.var.name;
    names.push_back(p.var.name);
  }
  std::string suggestion = closestMatch(define.name, names);
  diags.report(DiagKind::UnknownParameter,
               "-D " + define.text + ": schedule '" + schedule.name + "' has no parameter '" +
                   define.name + "'" +
                   (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?"))
      .note(schedule.nameRange,
            known.empty() ? "it declares no parameters" : "its parameters are " + known);
}

// A -D as an axis; a range's bounds are parsed from a buffer of their own.
bool defineAxis(Schedule &schedule, const ParamDefine &define, int param,
                ParameterDomain &domain, DiagnosticEngine &diags, DomainAxis &axis) {
  axis = DomainAxis{};
  axis.param = param;
  if (define.range.empty()) {
    axis.values = define.values;
    axis.description = define.single() ? define.text : define.name + " in {" +
                                                          llvm::StringRef(define.text)
                                                              .split('=')
                                                              .second.str() +
                                                          "}";
    return true;
  }
  axis.description = define.name + " in " + define.range;
  std::string line = "-D " + define.text;
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(line, "<command line>");
  unsigned id = diags.sources().AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  size_t offset = line.size() - define.range.size();
  ExprPtr lo, hi;
  if (!parseRangeText(id, offset, lo, hi, diags) || !resolveParameterExpr(schedule, *lo, diags) ||
      !resolveParameterExpr(schedule, *hi, diags))
    return false;
  axis.at = {lo->range.Start, hi->range.End};
  axis.lo = lo.get();
  axis.hi = hi.get();
  domain.owned.push_back(std::move(lo));
  domain.owned.push_back(std::move(hi));
  return true;
}

} // namespace

std::optional<ParameterDomain> buildDomain(Schedule &schedule, llvm::ArrayRef<ParamDefine> defines,
                                           uint64_t maxPoints, DiagnosticEngine &diags) {
  ParameterDomain domain;
  unsigned errorsBefore = diags.errorCount();
  std::vector<int> axisOf(schedule.params.size(), -1);
  for (const DomainDecl &decl : schedule.domains) {
    if (decl.paramIndex < 0)
      continue; // reported by the name resolver
    DomainAxis axis;
    axis.param = decl.paramIndex;
    axis.at = decl.valuesRange;
    axis.description = decl.name + " in " + sourceText(decl.valuesRange);
    axis.lo = decl.lo.get();
    axis.hi = decl.hi.get();
    axis.step = decl.step.get();
    for (const ExprPtr &item : decl.items)
      axis.items.push_back(item.get());
    axisOf[decl.paramIndex] = int(domain.axes.size());
    domain.axes.push_back(std::move(axis));
  }
  std::vector<DomainAxis> added;
  for (const ParamDefine &define : defines) {
    auto param = llvm::find_if(schedule.params,
                               [&](const Param &p) { return p.var.name == define.name; });
    if (param == schedule.params.end()) {
      reportUnknownParameter(schedule, define, diags);
      continue;
    }
    int index = int(param - schedule.params.begin());
    DomainAxis axis;
    if (!defineAxis(schedule, define, index, domain, diags, axis))
      continue;
    if (axisOf[index] >= 0) // overrides the declared domain, in its place
      domain.axes[axisOf[index]] = std::move(axis);
    else
      added.push_back(std::move(axis));
  }
  // The others follow, in the order the schedule declares its parameters.
  llvm::stable_sort(added, [](const DomainAxis &a, const DomainAxis &b) { return a.param < b.param; });
  for (DomainAxis &axis : added)
    domain.axes.push_back(std::move(axis));
  if (diags.errorCount() != errorsBefore)
    return std::nullopt;

  std::vector<DomainAxisRef> refs;
  for (const DomainAxis &axis : domain.axes) {
    DomainAxisRef ref{axis.param, axis.at, axis.items};
    if (axis.lo)
      ref.bounds.insert(ref.bounds.end(), {axis.lo, axis.hi});
    if (axis.step)
      ref.bounds.push_back(axis.step);
    refs.push_back(std::move(ref));
    domain.names.push_back(schedule.params[axis.param].var.name);
  }
  if (!checkDomainOrder(schedule, refs, diags))
    return std::nullopt;
  if (domain.axes.empty()) { // one point: the defaults
    domain.points.emplace_back();
    return domain;
  }
  if (!Enumerator(schedule, domain, maxPoints, diags).run())
    return std::nullopt;
  return domain;
}

} // namespace pipec
