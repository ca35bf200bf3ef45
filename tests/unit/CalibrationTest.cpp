// pipec calibrate's arithmetic: link fits recover the bandwidth and latency
// that generated collective times, efficiencies are FLOP-weighted, a Kineto
// trace's operators are sized from their shapes and timed by their kernels,
// and a program trace's ops are weighed by their samples.
#include "plan/Calibration.h"
#include "plan/KinetoTrace.h"
#include "plan/OpTimeModel.h"

#include <array>

#include <catch2/catch.hpp>

using namespace pipec::plan;

namespace {

Cluster h100() { return *clusterPreset("h100"); }

double gemmSecondsForTest(const Cluster &c, double m, double n, double k) {
  return gemmSeconds(c, m, n, k, false);
}

// The time the planner's model gives a collective (Calibration.h).
Measurement collective(MeasuredKind kind, double bytes, int64_t n, double bandwidth,
                       double latency, bool inter = false) {
  double steps = kind == MeasuredKind::AllReduce ? 2.0 * (n - 1) : double(n - 1);
  double share = kind == MeasuredKind::AllReduce ? 2.0 * (n - 1) / n : double(n - 1) / n;
  Measurement m;
  m.kind = kind;
  m.bytes = bytes;
  m.ranks = n;
  m.interNode = inter;
  m.seconds = steps * latency + share * bytes / bandwidth;
  return m;
}

} // namespace

TEST_CASE("collective fits recover the link's bandwidth and latency", "[calibrate]") {
  std::vector<Measurement> ms;
  for (double bytes : {1 << 20, 1 << 24, 1 << 28}) {
    ms.push_back(collective(MeasuredKind::AllReduce, bytes, 8, 180e9, 7e-6));
    ms.push_back(collective(MeasuredKind::AllGather, bytes, 8, 180e9, 7e-6));
    ms.push_back(collective(MeasuredKind::AllReduce, bytes, 32, 40e9, 20e-6, true));
  }
  std::string error;
  auto c = calibrate(ms, h100(), error);
  INFO(error);
  REQUIRE(c);
  REQUIRE(c->intraNode);
  REQUIRE(c->interNode);
  CHECK(c->intraNode->bandwidth == Approx(180e9).epsilon(1e-6));
  CHECK(c->intraNode->latency == Approx(7e-6).epsilon(1e-6));
  CHECK(c->interNode->bandwidth == Approx(40e9).epsilon(1e-6));
  CHECK(c->interNode->latency == Approx(20e-6).epsilon(1e-6));
  CHECK(c->intraNode->meanError < 1e-9);
  Cluster applied = applyCalibration(h100(), *c);
  // The link rate is what the collectives achieved over the bus efficiency.
  CHECK(applied.busBandwidth(true) == Approx(180e9).epsilon(1e-6));
  CHECK(applied.matmulEfficiency == h100().matmulEfficiency); // no compute measured

  // One size: the latency stays the cluster's, the bandwidth takes the rest.
  auto one = calibrate({collective(MeasuredKind::AllReduce, 1 << 26, 8, 100e9,
                                   h100().intraNodeLatency)},
                       h100(), error);
  REQUIRE(one);
  CHECK(one->intraNode->bandwidth == Approx(100e9).epsilon(1e-9));
}

TEST_CASE("an inter-node collective with several members a node calibrates one NIC", "[calibrate]") {
  // 32 GPUs, 8 a node: the ring crosses each node on 8 NICs of 25 GB/s, so the
  // collective runs at 200 GB/s; the cluster file's inter_node_bandwidth is one NIC's.
  std::vector<Measurement> ms;
  for (double bytes : {1 << 24, 1 << 28, 1 << 30}) {
    ms.push_back(collective(MeasuredKind::AllReduce, bytes, 32, 8 * 25e9, 20e-6, true));
    ms.back().membersPerNode = 8;
  }
  std::string error;
  auto c = calibrate(ms, h100(), error);
  INFO(error);
  REQUIRE(c);
  REQUIRE(c->interNode);
  CHECK(c->interNode->bandwidth == Approx(25e9).epsilon(1e-6));
  CHECK(c->interNode->latency == Approx(20e-6).epsilon(1e-6));
  // The sweep's file says so with "members_per_node".
  auto read = readSweepResults(R"({"measurements": [{"kind": "all_reduce", "bytes": 1e9, "ranks": 16,
    "inter_node": true, "members_per_node": 4, "seconds": 0.1}]})",
                               "sweep.json", error);
  REQUIRE(read);
  CHECK((*read)[0].membersPerNode == 4);
  CHECK_FALSE(readSweepResults(R"({"measurements": [{"kind": "all_reduce", "bytes": 1e9, "ranks": 16,
    "inter_node": true, "members_per_node": 0, "seconds": 0.1}]})",
                               "sweep.json", error));
  CHECK(error.find("members_per_node") != std::string::npos);
}

TEST_CASE("a Kineto collective is placed on nodes by its group's ranks", "[calibrate]") {
  auto place = [](const std::string &args) {
    std::string json = R"j({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "ts": 0, "dur": 5,
       "args": {"External id": 1, "Collective name": "allreduce", "In msg nelems": 1024,
                "Out msg nelems": 1024, "dtype": "BFloat16", )j" +
                       args + R"j(}},
      {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "ts": 10, "dur": 100, "args": {"External id": 1}}
    ]})j";
    std::string error;
    auto summary = readKinetoTrace(json, "trace.json", 8, error);
    INFO(error);
    REQUIRE(summary);
    REQUIRE(summary->measurements.size() == 1);
    return summary->measurements[0];
  };
  // Listed ranks: 16 GPUs of two nodes, 8 in each.
  Measurement all = place(R"("Group size": 16, "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]")");
  CHECK(all.interNode);
  CHECK(all.membersPerNode == 8);
  // Two ranks on two nodes: across nodes although the group is small.
  Measurement pair = place(R"("Group size": 2, "Process Group Ranks": "[3, 11]")");
  CHECK(pair.interNode);
  CHECK(pair.membersPerNode == 1);
  // Within one node.
  Measurement local = place(R"("Group size": 4, "Process Group Ranks": "[8, 9, 10, 11]")");
  CHECK_FALSE(local.interNode);
  // A list cut short falls back to start and stride: 64 ranks 4 apart, 2 a node.
  Measurement strided = place(
      R"("Group size": 64, "Process Group Ranks": "[0, 4, ..., 252]", "Global rank start": 0, "Global rank stride": 4)");
  CHECK(strided.interNode);
  CHECK(strided.membersPerNode == 2);
  // Absurd starts and strides are not used (no overflow): the fallback below.
  Measurement absurd = place(
      R"("Group size": 64, "Global rank start": 9223372036854775000, "Global rank stride": 4611686018427387904)");
  CHECK(absurd.membersPerNode == 1);
  // Neither: a group larger than a node spans nodes, one member in each.
  Measurement unknown = place(R"("Group size": 32)");
  CHECK(unknown.interNode);
  CHECK(unknown.membersPerNode == 1);
}

TEST_CASE("compute efficiency is FLOP-weighted and must stay under the peak", "[calibrate]") {
  Cluster c = h100();
  std::vector<Measurement> ms(2);
  ms[0].flops = 1e12, ms[0].seconds = 1e12 / (0.8 * c.peakFlops); // a large matmul at 80%
  ms[1].flops = 1e9, ms[1].seconds = 1e9 / (0.2 * c.peakFlops);   // a small one at 20%
  std::string error;
  auto cal = calibrate(ms, c, error);
  REQUIRE(cal);
  double expected = (1e12 + 1e9) / (ms[0].seconds + ms[1].seconds) / c.peakFlops;
  CHECK(cal->matmul.efficiency == Approx(expected));
  CHECK(cal->matmul.modelEfficiency == Approx(expected)); // no shapes: the raw figure
  CHECK(applyCalibration(c, *cal).matmulEfficiency == Approx(expected));
  ms[0].seconds /= 2; // 160% of peak: the peak is wrong
  CHECK_FALSE(calibrate(ms, c, error));
  CHECK(error.find("of the cluster's peak_flops") != std::string::npos);
  CHECK_FALSE(calibrate({}, c, error));
}

TEST_CASE("a matmul's shape losses are the model's: the efficiency reproduces the times",
          "[calibrate]") {
  // Times generated by the model itself at matmul_efficiency 0.6 for a large
  // and a badly tiled shape: calibrating against 0.8 recovers 0.6.
  Cluster truth = h100();
  truth.matmulEfficiency = 0.6;
  std::vector<Measurement> ms;
  for (auto [m, n, k] : {std::array<double, 3>{8192, 8192, 8192}, {4097, 1000, 3000}}) {
    Measurement x;
    x.kind = MeasuredKind::Matmul;
    x.m = m, x.n = n, x.k = k, x.flops = 2 * m * n * k;
    x.seconds = gemmSecondsForTest(truth, m, n, k);
    ms.push_back(x);
  }
  std::string error;
  auto cal = calibrate(ms, h100(), error);
  REQUIRE(cal);
  CHECK(cal->matmul.modelEfficiency == Approx(0.6).epsilon(1e-9));
  CHECK(cal->matmul.efficiency < 0.6); // the raw figure carries the shape losses
}

TEST_CASE("a Kineto trace's operators are sized by their shapes, timed by their kernels",
          "[calibrate]") {
  // aten::mm 4096x8192 @ 8192x8192 with two kernels (1 ms + 0.5 ms), an addmm
  // whose bias comes first, a causal flash attention, an all-reduce of 2^24
  // bf16 over 16 GPUs (two nodes of 8), and an mm without a kernel.
  std::string json = R"j({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 5,
     "args": {"External id": 1, "Input Dims": [[4096, 8192], [8192, 8192]]}},
    {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm", "ts": 10, "dur": 1000, "args": {"External id": 1}},
    {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm", "ts": 1010, "dur": 500, "args": {"External id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "ts": 20, "dur": 5,
     "args": {"External id": 2, "Input Dims": [[1024], [2048, 512], [512, 1024]]}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 2000, "dur": 10, "args": {"External id": 2}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::_scaled_dot_product_flash_attention", "ts": 30, "dur": 5,
     "args": {"External id": 3, "Input Dims": [[1, 64, 4096, 128], [1, 64, 4096, 128], [1, 64, 4096, 128], [], [], [], []],
              "Concrete Inputs": ["", "", "", "0.", "True", "False", ""]}},
    {"ph": "X", "cat": "kernel", "name": "flash_fwd_kernel", "ts": 3000, "dur": 800, "args": {"External id": 3}},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "ts": 40, "dur": 5,
     "args": {"External id": 4, "Collective name": "allreduce", "In msg nelems": 16777216,
              "Out msg nelems": 16777216, "Group size": 16, "dtype": "BFloat16"}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "ts": 4000, "dur": 2000, "args": {"External id": 4}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 50, "dur": 5,
     "args": {"External id": 5, "Input Dims": [[16, 16], [16, 16]]}}
  ]})j";
  std::string error;
  auto summary = readKinetoTrace(json, "trace.json", 8, error);
  INFO(error);
  REQUIRE(summary);
  CHECK(summary->kernels == 5);
  CHECK(summary->skipped == 1);
  REQUIRE(summary->measurements.size() == 4);
  const Measurement &mm = summary->measurements[0];
  CHECK(mm.kind == MeasuredKind::Matmul);
  CHECK(mm.flops == 2.0 * 4096 * 8192 * 8192);
  CHECK(mm.seconds == Approx(1.5e-3));
  CHECK(summary->measurements[1].flops == 2.0 * 2048 * 512 * 1024);
  CHECK(mm.m == 4096);
  CHECK(mm.n == 8192);
  CHECK(mm.k == 8192);
  const Measurement &attention = summary->measurements[2];
  CHECK(attention.kind == MeasuredKind::Attention);
  CHECK(attention.flops == Approx(4.0 * 64 * 4096.0 * 4096 * 128 / 2)); // causal
  const Measurement &reduce = summary->measurements[3];
  CHECK(reduce.kind == MeasuredKind::AllReduce);
  CHECK(reduce.bytes == 16777216.0 * 2);
  CHECK(reduce.ranks == 16);
  CHECK(reduce.interNode);

  CHECK_FALSE(readKinetoTrace("{\"events\": []}", "t.json", 8, error));
  CHECK(error.find("'traceEvents'") != std::string::npos);
}

TEST_CASE("a program trace's ops are weighed by their samples", "[calibrate]") {
  std::vector<StageProfile> model(2), measured(2);
  for (size_t s = 0; s < 2; ++s) {
    model[s].F = {2e-3, 1}, model[s].B = {4e-3, 1};
    measured[s].F = {3e-3, 8}, measured[s].B = {6e-3, 8};
  }
  // 2 stages x (8 x 3 ms + 8 x 6 ms) measured; the same ops at the model's times.
  CHECK(profiledSeconds(measured, measured) == Approx(2 * (8 * 3e-3 + 8 * 6e-3)));
  CHECK(profiledSeconds(model, measured) == Approx(2 * (8 * 2e-3 + 8 * 4e-3)));
  // Scaling the compute efficiencies stops at 1.
  Cluster scaled = scaleCompute(h100(), 2);
  CHECK(scaled.matmulEfficiency == 1);
  CHECK(maxComputeScale(h100()) == Approx(1 / 0.8));
}

TEST_CASE("sweep results are read with named errors", "[calibrate]") {
  std::string error;
  auto ok = readSweepResults(R"({"measurements": [
      {"kind": "matmul", "flops": 1e12, "seconds": 0.002},
      {"kind": "all_reduce", "bytes": 1e8, "ranks": 8, "seconds": 0.001}]})",
                             "sweep.json", error);
  REQUIRE(ok);
  CHECK(ok->size() == 2);
  CHECK((*ok)[1].ranks == 8);
  CHECK_FALSE(readSweepResults(R"({"measurements": [{"kind": "conv", "seconds": 1}]})",
                               "sweep.json", error));
  CHECK(error.find("field 'kind' is 'conv'") != std::string::npos);
  CHECK_FALSE(readSweepResults(R"({"measurements": [{"kind": "matmul", "flops": 1e12}]})",
                               "sweep.json", error));
  CHECK(error.find("seconds") != std::string::npos);
}
