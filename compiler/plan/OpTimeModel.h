// Seconds of the operations a transformer layer runs on one GPU: matmuls from
// their shapes (a roofline with tile and wave quantization), FlashAttention
// (causal), and memory-bound kernels from the bytes they move. Collectives are
// in Collectives.cpp; how a layer composes these is in LayerTimes.h.
#pragma once

#include "plan/Cluster.h"
#include "plan/Training.h"

namespace pipec::plan {

// Share of the GPU's matmul throughput a GEMM of an m x n output reaches from
// its shape alone, after NVIDIA's "Matrix Multiplication Background User's
// Guide" (Deep Learning Performance docs): the output is cut into thread-block
// tiles (256 x 128 or 128 x 256; 128 x 128, 128 x 64 or 64 x 128 at the lower
// throughput of their lower operand reuse, whichever runs the shape best), a
// partial tile costs a whole one (tile quantization), and tiles run in waves of
// one per SM, a partial last wave costing a whole one (wave quantization). 1
// for shapes that fill both; 1 when the cluster gives no SM count.
double gemmShapeEfficiency(const Cluster &cluster, double m, double n);

// One GEMM C[m, n] = A[m, k] B[k, n]: max(FLOPs / attainable FLOP/s, bytes /
// attainable HBM bandwidth), attainable FLOP/s = peak x matmul efficiency x
// shape efficiency, BF16 or (when `fp8`) FP8 peak and efficiency; an FP8
// GEMM's efficiency is further scaled by k / (k + fp8_gemm_k_overhead), a
// tile's fixed cost paid over k (DeepGEMM's measured table, GpuPresets.cpp).
// Operands take 2 bytes per element (1 for FP8), the output 2.
double gemmSeconds(const Cluster &cluster, double m, double n, double k, bool fp8);

// The same GEMM launched on `sms` of the GPU's SMs, the rest held by a
// communication kernel that overlaps it: the peak scales with the SMs it has
// and its tiles run in waves of `sms`. gemmSeconds when `sms` is not below the
// cluster's SM count (or the cluster gives none).
double gemmSecondsOnSms(const Cluster &cluster, double m, double n, double k, bool fp8, int64_t sms);

// FlashAttention over `batchHeads` (micro-batch x heads on this GPU) of query
// length sq against key length sk (causal: half the score blocks), head
// dimensions dqk (Q, K) and dv (V). Forward FLOPs 2 sq sk (dqk + dv) per head
// (halved when causal); the backward does 2.5x the forward's FLOPs (five
// matmuls to two, FlashAttention-2 §3.2). Each at the measured efficiency.
double flashForwardSeconds(const Cluster &cluster, double batchHeads, double sq, double sk, double dqk,
                           double dv, bool causal);
double flashBackwardSeconds(const Cluster &cluster, double batchHeads, double sq, double sk, double dqk,
                            double dv, bool causal);

// Transformer Engine's cast of a BF16 GEMM input of `elements` to FP8 (the
// activation in the forward, the output gradient in the backward; weights are
// cast once a step): an amax pass and a cast writing a row-wise and a
// transposed copy (the weight-gradient GEMM reads the transposed one).
double fp8CastSeconds(const Cluster &cluster, double elements);

// Kernels limited by memory: bytes / (HBM bandwidth x memory efficiency).
double memoryBoundSeconds(const Cluster &cluster, double bytes);

} // namespace pipec::plan
