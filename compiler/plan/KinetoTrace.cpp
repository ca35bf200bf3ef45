#include "plan/KinetoTrace.h"

#include "plan/JsonFields.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace pipec::plan {

namespace {

// The shapes of an operator's inputs ("Input Dims": [[m, k], [k, n], ...]).
std::vector<std::vector<double>> inputDims(const llvm::json::Object *args) {
  std::vector<std::vector<double>> dims;
  const llvm::json::Array *list = args ? args->getArray("Input Dims") : nullptr;
  if (!list)
    return dims;
  for (const llvm::json::Value &shape : *list) {
    dims.emplace_back();
    if (const llvm::json::Array *sizes = shape.getAsArray())
      for (const llvm::json::Value &size : *sizes)
        if (auto v = size.getAsNumber())
          dims.back().push_back(*v);
  }
  return dims;
}

// The scalar arguments Kineto records as strings ("Concrete Inputs").
std::vector<std::string> concreteInputs(const llvm::json::Object *args) {
  std::vector<std::string> values;
  if (const llvm::json::Array *list = args ? args->getArray("Concrete Inputs") : nullptr)
    for (const llvm::json::Value &v : *list)
      values.push_back(v.getAsString() ? v.getAsString()->str() : "");
  return values;
}

// A collective group's global ranks: "Process Group Ranks" ("[0, 8, 16]",
// cut short past 30 ranks with "..."), else "Global rank start" and "Global
// rank stride" for `size` ranks; empty when the trace says neither.
std::vector<int64_t> groupRanks(const llvm::json::Object &args, int64_t size) {
  std::vector<int64_t> ranks;
  if (auto text = args.getString("Process Group Ranks")) {
    llvm::SmallVector<llvm::StringRef, 32> items;
    text->trim().trim("[]").split(items, ',', -1, false);
    for (llvm::StringRef item : items) {
      int64_t rank = 0;
      if (item.trim().getAsInteger(10, rank) || rank < 0) {
        ranks.clear(); // "..." or anything else: not the whole list
        break;
      }
      ranks.push_back(rank);
    }
    if (int64_t(ranks.size()) == size)
      return ranks;
    ranks.clear();
  }
  auto start = args.getInteger("Global rank start");
  auto stride = args.getInteger("Global rank stride");
  // Bounded so that start + i x stride cannot overflow (a real trace's ranks
  // are far below these).
  const int64_t limit = int64_t(1) << 31;
  if (start && stride && *start >= 0 && *start < limit && *stride >= 1 && *stride < limit &&
      size <= (int64_t(1) << 24))
    for (int64_t i = 0; i < size; ++i)
      ranks.push_back(*start + i * *stride);
  return ranks;
}

// Whether a group's ranks span nodes of `gpusPerNode` (global ranks numbered
// node by node, as launchers do), and the most of them in one node.
void placeGroup(Measurement &m, const std::vector<int64_t> &ranks, int64_t gpusPerNode) {
  std::map<int64_t, int64_t> perNode;
  for (int64_t rank : ranks)
    ++perNode[rank / gpusPerNode];
  m.interNode = perNode.size() > 1;
  m.membersPerNode = 1;
  for (const auto &[node, count] : perNode)
    m.membersPerNode = std::max(m.membersPerNode, count);
}

double product(const std::vector<double> &shape, size_t first, size_t last) {
  double p = 1;
  for (size_t i = first; i < last && i < shape.size(); ++i)
    p *= shape[i];
  return p;
}

// FLOPs of a matmul operator from its shapes; 0 when they do not fit.
double matmulFlops(llvm::StringRef op, const std::vector<std::vector<double>> &dims) {
  // addmm(bias, a, b), baddbmm(bias, a, b): the factors come after the bias.
  size_t a = op == "aten::addmm" || op == "aten::baddbmm" ? 1 : 0;
  if (dims.size() < a + 2)
    return 0;
  const std::vector<double> &x = dims[a], &y = dims[a + 1];
  if (x.size() < 2 || y.size() < 2 || x.back() != y[y.size() - 2])
    return 0;
  double batch = product(x, 0, x.size() - 2); // bmm: the batch dimension
  return 2 * batch * x[x.size() - 2] * x.back() * y.back();
}

// FLOPs of scaled-dot-product attention: q [b, h, s_q, d], k [b, h, s_k, d],
// v [b, h, s_k, d_v]: QK^T and AV.
double attentionFlops(llvm::StringRef op, const std::vector<std::vector<double>> &dims,
                      const std::vector<std::string> &scalars) {
  bool backward = op.endswith("_backward");
  // The backward's first input is the output gradient; q, k, v follow.
  size_t q = backward ? 1 : 0;
  if (dims.size() < q + 3 || dims[q].size() != 4 || dims[q + 1].size() != 4 ||
      dims[q + 2].size() != 4)
    return 0;
  const std::vector<double> &Q = dims[q], &K = dims[q + 1], &V = dims[q + 2];
  double flops = 2 * Q[0] * Q[1] * Q[2] * K[2] * Q[3] + 2 * Q[0] * Q[1] * Q[2] * K[2] * V[3];
  // is_causal's position in each operator's signature (ATen native_functions.yaml).
  struct CausalAt {
    const char *op;
    size_t index;
  };
  static const CausalAt kCausal[] = {
      {"aten::_scaled_dot_product_flash_attention", 4},
      {"aten::_scaled_dot_product_flash_attention_backward", 11},
      {"aten::_scaled_dot_product_efficient_attention", 6},
      {"aten::_scaled_dot_product_efficient_attention_backward", 11},
      {"aten::_scaled_dot_product_cudnn_attention", 6},
      {"aten::_flash_attention_forward", 8},
      {"aten::_flash_attention_backward", 12},
  };
  bool causal = false;
  for (const CausalAt &at : kCausal)
    if (op == at.op)
      causal = at.index < scalars.size() && (scalars[at.index] == "True" || scalars[at.index] == "true");
  if (causal)
    flops /= 2;
  return backward ? 2.5 * flops : flops;
}

bool isAttention(llvm::StringRef op) {
  return op.startswith("aten::_scaled_dot_product_flash_attention") ||
         op.startswith("aten::_scaled_dot_product_efficient_attention") ||
         op.startswith("aten::_scaled_dot_product_cudnn_attention") ||
         op.startswith("aten::_flash_attention_");
}

bool isMatmul(llvm::StringRef op) {
  return op == "aten::mm" || op == "aten::addmm" || op == "aten::bmm" || op == "aten::baddbmm";
}

double dtypeBytes(llvm::StringRef dtype) {
  if (dtype == "Float" || dtype == "Int" || dtype == "float32")
    return 4;
  if (dtype == "Double" || dtype == "Long")
    return 8;
  if (dtype.startswith("Float8") || dtype == "Byte" || dtype == "Char" || dtype == "Bool")
    return 1;
  return 2; // BFloat16, Half
}

std::optional<MeasuredKind> collectiveKind(llvm::StringRef name) {
  std::string n = name.lower();
  llvm::StringRef s(n);
  if (s.contains("allreduce") || s.contains("all_reduce"))
    return MeasuredKind::AllReduce;
  if (s.contains("reduce_scatter") || s.contains("reducescatter"))
    return MeasuredKind::ReduceScatter;
  if (s.contains("all_gather") || s.contains("allgather"))
    return MeasuredKind::AllGather;
  if (s.contains("all_to_all") || s.contains("alltoall"))
    return MeasuredKind::AllToAll;
  if (s.contains("send") || s.contains("recv"))
    return MeasuredKind::SendRecv;
  return std::nullopt;
}

struct Operator {
  std::string name;
  const llvm::json::Object *args;
};

} // namespace

std::optional<KinetoSummary> readKinetoTrace(llvm::StringRef json, llvm::StringRef name,
                                             int64_t gpusPerNode, std::string &error) {
  std::optional<llvm::json::Object> object = parseJsonObject(json, name, error);
  if (!object)
    return std::nullopt;
  const llvm::json::Array *events = object->getArray("traceEvents");
  if (!events) {
    error = name.str() + ": field 'traceEvents' is missing or not an array (not a PyTorch "
                         "profiler trace)";
    return std::nullopt;
  }
  KinetoSummary summary;
  std::map<int64_t, Operator> operators;   // by External id
  std::map<int64_t, double> deviceSeconds; // kernel time by External id
  for (const llvm::json::Value &value : *events) {
    const llvm::json::Object *event = value.getAsObject();
    if (!event || event->getString("ph") != llvm::StringRef("X"))
      continue;
    auto category = event->getString("cat");
    auto label = event->getString("name");
    const llvm::json::Object *args = event->getObject("args");
    llvm::Optional<int64_t> id;
    if (args)
      id = args->getInteger("External id");
    if (!category || !label || !id)
      continue;
    if (*category == "kernel" || *category == "gpu_memcpy") {
      auto duration = event->getNumber("dur");
      if (!duration || !std::isfinite(*duration) || *duration < 0) {
        error = name.str() + ": kernel '" + label->str() + "' has no finite 'dur'";
        return std::nullopt;
      }
      if (*category == "kernel") {
        deviceSeconds[*id] += *duration * 1e-6;
        ++summary.kernels;
      }
    } else if (*category == "cpu_op" || *category == "user_annotation") {
      operators[*id] = {label->str(), args};
    }
  }
  for (const auto &[id, op] : operators) {
    bool collective = op.name == "record_param_comms";
    if (!isMatmul(op.name) && !isAttention(op.name) && !collective)
      continue;
    auto time = deviceSeconds.find(id);
    if (time == deviceSeconds.end() || !(time->second > 0)) {
      ++summary.skipped;
      continue;
    }
    Measurement m;
    m.name = op.name;
    m.seconds = time->second;
    if (isMatmul(op.name)) {
      m.kind = MeasuredKind::Matmul;
      std::vector<std::vector<double>> dims = inputDims(op.args);
      m.flops = matmulFlops(op.name, dims);
      if (m.flops > 0) { // the factors' shapes: a batch folds into m
        size_t a = op.name == "aten::addmm" || op.name == "aten::baddbmm" ? 1 : 0;
        const std::vector<double> &x = dims[a], &y = dims[a + 1];
        m.m = product(x, 0, x.size() - 1);
        m.k = x.back();
        m.n = y.back();
      }
    } else if (isAttention(op.name)) {
      m.kind = llvm::StringRef(op.name).endswith("_backward") ? MeasuredKind::AttentionBackward
                                                               : MeasuredKind::Attention;
      m.flops = attentionFlops(op.name, inputDims(op.args), concreteInputs(op.args));
    } else {
      auto collectiveName = op.args->getString("Collective name");
      std::optional<MeasuredKind> kind =
          collectiveName ? collectiveKind(*collectiveName) : std::nullopt;
      auto in = op.args->getNumber("In msg nelems");
      auto out = op.args->getNumber("Out msg nelems");
      auto group = op.args->getInteger("Group size");
      auto dtype = op.args->getString("dtype");
      if (!kind || !group || (!in && !out)) {
        ++summary.skipped;
        continue;
      }
      m.kind = *kind;
      m.name = collectiveName->str();
      m.bytes = std::max(in.getValueOr(0), out.getValueOr(0)) * dtypeBytes(dtype.getValueOr("BFloat16"));
      m.ranks = *group;
      // Without the group's ranks, a group larger than a node spans nodes with
      // one member in each, as far as the trace tells.
      m.interNode = gpusPerNode > 0 && *group > gpusPerNode;
      std::vector<int64_t> ranks = groupRanks(*op.args, *group);
      if (gpusPerNode > 0 && !ranks.empty())
        placeGroup(m, ranks, gpusPerNode);
      else if (m.interNode)
        ++summary.unplaced;
    }
    if (!isCollective(m.kind) && !(m.flops > 0)) {
      ++summary.skipped; // no shapes recorded (record_shapes=False)
      continue;
    }
    summary.measurements.push_back(std::move(m));
  }
  return summary;
}

} // namespace pipec::plan
