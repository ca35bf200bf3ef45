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
//  [GB200] NVIDIA GB200 NVL72 datasheet, per GPU: 10 PFLOP/s FP8 and 5 BF16
//          with sparsity (5 and 2.5 dense), 186 GB HBM3e at 8 TB/s, NVLink 5
//          1.8 TB/s (900 each way) across the rack's 72 GPUs: one NVLink
//          domain of 72, which the preset calls a node. Each compute tray
//          has a ConnectX-7 400 Gb/s NIC a GPU. SMs as the B200's (148). Its
//          186 GB are taken as GiB (no nvidia-smi figure was found).
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
//  - Cross-check and Blackwell: Stas Bekman's "Maximum Achievable Matmul
//    FLOPS" table (stas00/ml-engineering, compute/accelerator/README.md at
//    744d01e; torch.matmul, BF16 and FP8 e4m3 without sparsity, the best of
//    a brute-force search over M, N, K up to 20,480; mean of 100 iterations
//    after 50 warm-up): H100 SXM BF16 794.5 of 989 TFLOP/s (80.3%), FP8
//    1,402.6 of 1,979 (70.9%) at 1024 x 9216 x 14336; A100 SXM BF16 271.2 of
//    312 (86.9%). The Hopper and Ampere figures above reproduce those
//    (PlanOpModelTest). B200 SXM: BF16 1,745.0 of 2,250 (77.6%) at
//    1792 x 16128 x 3072, FP8 3,432.5 of 4,500 (76.3%) at 15360 x 4096 x 3072
//    (B300, GB200: best FP8 shapes at K = 7168 and 1536). Blackwell's best FP8
//    shapes have a short k, where Hopper's k term would give 0.59 of peak
//    (H100's best is at K = 14336, as the k term says): the k effect measured
//    on Hopper does not show on Blackwell at the shapes searched, so the B200
//    takes the table's levels with no k term (0.776, 0.763, k0 = 0). Before,
//    it took Hopper's, which made its FP8 GEMMs about 25% slower than
//    measured at k = 3072. GB200 (same table, its higher peaks): BF16
//    1,822.0 of 2,500 (72.9%) at 4096 x 9728 x 2048, FP8 3,615.6 of 5,000
//    (72.3%) at 19456 x 5120 x 1536; 0.729 and 0.723, no k term.
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
constexpr double kGiB = 1024.0 * kMiB;

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

const char *gpuPresetNames() { return "a100, h100, h800, h200, b200, gb200"; }

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
    g.matmulEfficiency = 0.776;   // the MAMF table, above
    g.matmulEfficiencyFp8 = 0.763; // the same
    g.fp8GemmKOverhead = 0;        // no k effect measured on Blackwell
    return g;
  }
  if (name == "gb200") {
    GpuSpec g = hopper("gb200", kGiB * 186, 8e12, 900e9);
    g.gpusPerNode = 72; // the NVL72 rack's NVLink domain
    g.peakFlops = 2500e12;
    g.peakFlopsFp8 = 5000e12;
    g.smCount = 148;
    g.matmulEfficiency = 0.729;   // the MAMF table, above
    g.matmulEfficiencyFp8 = 0.723; // the same
    g.fp8GemmKOverhead = 0;
    return g;
  }
  return std::nullopt;
}

} // namespace pipec::plan
