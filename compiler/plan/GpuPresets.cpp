// Datasheet figures and measured efficiencies of the GPU presets.
//
// Sources (vendor datasheets unless said otherwise):
//  [A100]  NVIDIA A100 Tensor Core GPU datasheet (80GB SXM): BF16 312 TFLOP/s
//          dense (624 with sparsity), HBM2e 2,039 GB/s, NVLink 600 GB/s (both
//          directions: 300 each way); NVIDIA Ampere architecture whitepaper:
//          108 SMs. DGX A100: eight 200 Gb/s HDR InfiniBand NICs, one a GPU
//          (25 GB/s each way).
//  [H100]  NVIDIA H100 Tensor Core GPU datasheet (SXM): BF16 989 TFLOP/s dense
//          (1,979 with sparsity), FP8 1,979 dense (3,958 sparse), HBM3 3.35 TB/s,
//          NVLink 900 GB/s (450 each way); Hopper architecture whitepaper:
//          132 SMs on the SXM5 part. DGX H100: eight 400 Gb/s ConnectX-7 NICs,
//          one a GPU (50 GB/s each way).
//  [H800]  The H100 SXM with NVLink cut to 400 GB/s (200 each way):
//          DeepSeek-V3 technical report §3.1, which also gives 400 Gb/s IB.
//  [H200]  NVIDIA H200 datasheet (SXM): 141 GB HBM3e, 4.8 TB/s, the H100's
//          compute and NVLink.
//  [B200]  NVIDIA DGX B200 datasheet: 1,440 GB for 8 GPUs (180 GB each), 72
//          PFLOP/s FP8 training with sparsity for 8 (4.5 dense each), so BF16
//          2.25 PFLOP/s dense; HBM3e 8 TB/s; NVLink 5 1.8 TB/s (900 each way);
//          ConnectX-7 400 Gb/s per GPU. 148 SMs (as the CUDA runtime reports).
//  Memory: datasheets give GB that are binary (GiB): nvidia-smi reports
//  81,920 MiB on the A100 80GB, 81,559 MiB on the H100 80GB, 143,771 MiB on
//  the H200 and 183,359 MiB on the B200; those are the capacities used.
//
// Efficiencies (measured, not datasheet):
//  - matmulEfficiency: cuBLAS BF16 GEMMs of large, tile-aligned shapes reach
//    about 80% of the dense peak on Hopper (790 TFLOP/s on an H200 measured for
//    this project; NVIDIA's Transformer Engine and MLPerf submissions report
//    the same range) and about 85% on the A100 (265 of 312 TFLOP/s, NVIDIA's
//    "Matrix Multiplication Background" guide, Fig. 1 class of shapes; an
//    assumption from that range, not a measurement of ours). Shape
//    losses (tile and wave quantization) come on top, in OpTimeModel.cpp.
//  - matmulEfficiencyFp8 and fp8GemmKOverhead: FP8 GEMMs reach a smaller
//    share of their doubled peak, and a smaller one still when the inner
//    dimension k is short (a tile's fixed cost, its pipeline fill and
//    epilogue, is paid over fewer main-loop steps). Source: DeepGEMM's README
//    (deepseek-ai/DeepGEMM, "Performance", table "Normal GEMMs for dense
//    models", as first published: commit a6d97a1 of 2025-02-25, unchanged
//    through 78cacf7; FP8 with fine-grained scaling on an H800, NVCC 12.8;
//    the H800's tensor cores are the H100 SXM's, 1,979 TFLOP/s dense FP8).
//    Its M = 4096 rows are large enough for the k effect
//    to show alone. Two rows with the same M and N (so the same tiles and
//    waves), M = 4096, N = 7168: K = 16384 at 1,358 TFLOP/s and K = 2048 at
//    1,025, give, with efficiency = E x k / (k + k0) x shape efficiency
//    (0.970 for that shape, OpTimeModel.cpp), k0 = 797 and E = 0.742. The
//    other M = 4096 rows check it (PlanOpModelTest): N 4096 K 7168, 1,304
//    measured, 1,282 modelled; N 24576 K 1536, 990 and 937; N 32768 K 512,
//    590 and 557; N 2112 K 7168, 1,058 and 881 (that shape's tiles, not k).
//    A k-independent 0.70 (the previous figure, from NVIDIA's cuBLAS FP8
//    results of 1,300-1,450 TFLOP/s for large shapes) is 31% to 128% fast on
//    the short-k rows. Which edition: the first table's large-k level (K =
//    16384: 0.686 of peak) is the cuBLAS level cited before, so the k term
//    changes the dependence on k, not that level. Later editions measure
//    DeepGEMM's own later tuning (README news of 2025-04-18, "up to 1550
//    TFLOPS", PRs #74-#86), which Transformer Engine's cuBLAS FP8 (what the
//    NeMo runs use) does not get: 55ab91f (2025-03-25) gives E = 0.767,
//    k0 = 534; 327ec92 (2025-04-09, the last with the table) E = 0.828,
//    k0 = 737. The k dependence holds in all three; the level differs.
//    Blackwell is assumed the same for lack of a published
//    per-shape table (its tensor cores do twice the work per SM and clock, so
//    the same fixed cost is more k steps there: k0 is if anything low).
//  - attention: FlashAttention-2 (Dao 2023, §4) reaches 50-73% of peak in the
//    forward and 45-63% in the backward on the A100 at head dimension 128;
//    FlashAttention-3 (Shah et al. 2024, §4.1) 55-75% forward on the H100 in
//    BF16, its backward 45-55%. We take the causal, head-128, 2-4k-sequence
//    points: A100 0.60 / 0.50, Hopper and Blackwell 0.58 / 0.45.
//  - memoryEfficiency: elementwise kernels stream at about 80-90% of HBM
//    bandwidth (STREAM-style copies on the A100 and H100); 0.8.
#include "plan/GpuPresets.h"

namespace pipec::plan {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

GpuSpec hopper(const char *name, double memory, double hbm, double nvlink) {
  GpuSpec g;
  g.name = name;
  g.memoryBytes = memory;
  g.peakFlops = 989e12;
  g.peakFlopsFp8 = 1979e12;
  g.hbmBandwidth = hbm;
  g.smCount = 132;
  g.nvlinkBandwidth = nvlink;
  g.networkBandwidth = 50e9;
  g.matmulEfficiency = 0.80;
  g.matmulEfficiencyFp8 = 0.742; // DeepGEMM's table, above
  g.fp8GemmKOverhead = 797;       // the same
  g.attentionForwardEfficiency = 0.58;
  g.attentionBackwardEfficiency = 0.45;
  g.memoryEfficiency = 0.8;
  return g;
}

} // namespace

const char *gpuPresetNames() { return "a100, h100, h800, h200, b200"; }

std::optional<GpuSpec> gpuPreset(llvm::StringRef name) {
  if (name == "a100") {
    GpuSpec g;
    g.name = "a100";
    g.memoryBytes = kMiB * 81920;
    g.peakFlops = 312e12;
    g.peakFlopsFp8 = 0; // no FP8 tensor cores on Ampere
    g.hbmBandwidth = 2039e9;
    g.smCount = 108;
    g.nvlinkBandwidth = 300e9;
    g.networkBandwidth = 25e9;
    g.matmulEfficiency = 0.85;
    g.matmulEfficiencyFp8 = 0.85; // unused: no FP8 (an FP8 plan is refused)
    g.attentionForwardEfficiency = 0.60;
    g.attentionBackwardEfficiency = 0.50;
    g.memoryEfficiency = 0.8;
    return g;
  }
  if (name == "h100")
    return hopper("h100", kMiB * 81559, 3.35e12, 450e9);
  if (name == "h800")
    return hopper("h800", kMiB * 81559, 3.35e12, 200e9);
  if (name == "h200")
    return hopper("h200", kMiB * 143771, 4.8e12, 450e9);
  if (name == "b200") {
    GpuSpec g = hopper("b200", kMiB * 183359, 8e12, 900e9);
    g.peakFlops = 2250e12;
    g.peakFlopsFp8 = 4500e12;
    g.smCount = 148;
    return g;
  }
  return std::nullopt;
}

} // namespace pipec::plan
