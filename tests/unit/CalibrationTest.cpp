// pipec calibrate's arithmetic: link fits recover the bandwidth and latency
// that generated collective times, efficiencies are FLOP-weighted, a Kineto
// trace's operators are sized from their shapes and timed by their kernels,
// and a program trace's ops give the sustained fraction that reproduces them.
#include "plan/Calibration.h"
#include "plan/KinetoTrace.h"

#include <catch2/catch.hpp>

using namespace pipec::plan;

namespace {

Cluster h100() { return *clusterPreset("h100"); }

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
  CHECK(applied.intraNodeBandwidth == Approx(180e9).epsilon(1e-6));
  CHECK(applied.sustainedFraction == h100().sustainedFraction); // no compute measured

  // One size: the latency stays the cluster's, the bandwidth takes the rest.
  auto one = calibrate({collective(MeasuredKind::AllReduce, 1 << 26, 8, 100e9,
                                   h100().intraNodeLatency)},
                       h100(), error);
  REQUIRE(one);
  CHECK(one->intraNode->bandwidth == Approx(100e9).epsilon(1e-9));
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
  CHECK(cal->matmulEfficiency == Approx(expected));
  CHECK(cal->computeEfficiency == Approx(expected));
  CHECK(applyCalibration(c, *cal).sustainedFraction == Approx(expected));
  ms[0].seconds /= 2; // 160% of peak: the peak is wrong
  CHECK_FALSE(calibrate(ms, c, error));
  CHECK(error.find("of the cluster's peak_flops") != std::string::npos);
  CHECK_FALSE(calibrate({}, c, error));
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

TEST_CASE("a program trace's times give the fraction that reproduces them", "[calibrate]") {
  // The model predicts 2 ms forwards and 4 ms backwards at fraction 0.5; the
  // trace measured 1.5x as long: the fraction is 0.5 / 1.5.
  std::vector<StageProfile> predicted(2), measured(2);
  for (size_t s = 0; s < 2; ++s) {
    predicted[s].F = {2e-3, 1}, predicted[s].B = {4e-3, 1};
    measured[s].F = {3e-3, 8}, measured[s].B = {6e-3, 8};
  }
  std::string error;
  auto f = sustainedFractionFromProfile(measured, predicted, 0.5, error);
  REQUIRE(f);
  CHECK(*f == Approx(0.5 / 1.5));
  for (StageProfile &p : measured)
    p.F.seconds /= 10, p.B.seconds /= 10; // faster than the peak allows
  CHECK_FALSE(sustainedFractionFromProfile(measured, predicted, 0.5, error));
  CHECK_FALSE(sustainedFractionFromProfile(std::vector<StageProfile>(2), predicted, 0.5, error));
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
