// Shape losses, the GEMM roofline, FlashAttention and memory-bound kernel times
// (the formulas and their sources are in OpTimeModel.h).
#include "plan/OpTimeModel.h"

#include <algorithm>
#include <cmath>

namespace pipec::plan {

namespace {

double tileEfficiency(double m, double n, double tm, double tn, double sms) {
  double tilesM = std::ceil(m / tm), tilesN = std::ceil(n / tn);
  double tiles = tilesM * tilesN;
  double tileQuantization = (m * n) / (tiles * tm * tn);
  double waves = std::ceil(tiles / sms);
  double waveQuantization = tiles / (waves * sms);
  return tileQuantization * waveQuantization;
}

// The shape efficiency on `sms` SMs (the waves are of that many tiles).
double shapeEfficiencyOn(double sms, double m, double n) {
  if (sms <= 0 || m <= 0 || n <= 0)
    return 1;
  // The library picks the tile that runs the shape best. A smaller tile reuses
  // each operand it loads less: its arithmetic intensity, tm tn / (tm + tn),
  // relative to the large tile's bounds its throughput.
  struct Tile {
    double m, n;
  };
  static const Tile kTiles[] = {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}};
  auto intensity = [](double tm, double tn) { return tm * tn / (tm + tn); };
  double best = 0;
  for (const Tile &t : kTiles)
    best = std::max(best, tileEfficiency(m, n, t.m, t.n, sms) * intensity(t.m, t.n) / intensity(256, 128));
  return best;
}

// A GEMM on `sms` of the cluster's SMs: the peak scaled to them, the waves of
// that many tiles (all of them: gemmSeconds).
double gemmSecondsOn(const Cluster &c, double m, double n, double k, bool fp8, int64_t sms) {
  if (m <= 0 || n <= 0 || k <= 0)
    return 0;
  bool useFp8 = fp8 && c.peakFlopsFp8 > 0;
  double share = c.smCount > 0 ? double(sms) / double(c.smCount) : 1.0;
  double peak = (useFp8 ? c.peakFlopsFp8 : c.peakFlops) * share;
  double efficiency = useFp8 ? c.matmulEfficiencyFp8 : c.matmulEfficiency;
  // A tile's fixed cost over its k / tile-depth main-loop steps: measured for
  // FP8 (DeepGEMM's table, GpuPresets.cpp); none given for BF16.
  if (useFp8 && c.fp8GemmKOverhead > 0)
    efficiency *= k / (k + c.fp8GemmKOverhead);
  double flops = 2 * m * n * k;
  double compute = flops / (peak * efficiency * shapeEfficiencyOn(double(sms), m, n));
  double inputBytes = fp8 ? 1 : 2;
  double bytes = inputBytes * (m * k + k * n) + 2 * m * n;
  return std::max(compute, memoryBoundSeconds(c, bytes));
}

} // namespace

double gemmShapeEfficiency(const Cluster &c, double m, double n) {
  return shapeEfficiencyOn(double(c.smCount), m, n);
}

double gemmSeconds(const Cluster &c, double m, double n, double k, bool fp8) {
  return gemmSecondsOn(c, m, n, k, fp8, c.smCount);
}

double gemmSecondsOnSms(const Cluster &c, double m, double n, double k, bool fp8, int64_t sms) {
  if (c.smCount <= 0 || sms >= c.smCount || sms <= 0)
    return gemmSeconds(c, m, n, k, fp8);
  return gemmSecondsOn(c, m, n, k, fp8, sms);
}

static double attentionFlops(double batchHeads, double sq, double sk, double dqk, double dv, bool causal) {
  double flops = 2 * batchHeads * sq * sk * (dqk + dv);
  // Causal: of the sq x sk scores, those above the diagonal are skipped. When
  // sq < sk (a context-parallel chunk against all keys) the caller passes the
  // share it computes.
  return causal ? flops / 2 : flops;
}

double flashForwardSeconds(const Cluster &c, double batchHeads, double sq, double sk, double dqk, double dv,
                           bool causal) {
  return attentionFlops(batchHeads, sq, sk, dqk, dv, causal) / (c.peakFlops * c.attentionForwardEfficiency);
}

double flashBackwardSeconds(const Cluster &c, double batchHeads, double sq, double sk, double dqk, double dv,
                            bool causal) {
  return 2.5 * attentionFlops(batchHeads, sq, sk, dqk, dv, causal) /
         (c.peakFlops * c.attentionBackwardEfficiency);
}

double fp8CastSeconds(const Cluster &c, double elements) {
  // Current scaling: one pass for the amax (read 2 bytes), then the cast
  // (read 2, write the row-wise and the transposed FP8 copies, 1 + 1).
  return memoryBoundSeconds(c, 6 * elements);
}

double memoryBoundSeconds(const Cluster &c, double bytes) {
  return bytes / (c.hbmBandwidth * c.memoryEfficiency);
}

} // namespace pipec::plan
