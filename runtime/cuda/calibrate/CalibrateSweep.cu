// pipec-calibrate-sweep: times what the planner's model prices on the GPUs of
// this node, through the CUDA runtime's checked calls and handles
// (pipert/cuda/CudaCheck.h), and writes the measurements `pipec calibrate
// --sweep FILE` reduces to a cluster file:
//  - matmuls: bf16 cuBLAS GEMMs (fp32 accumulation) over square sizes and the
//    shapes of transformer layers, 2 m n k FLOPs each;
//  - attention: unfused scaled-dot-product attention (QK^T and AV as strided
//    batched GEMMs, a row softmax between them), 4 b h s^2 d FLOPs, written as
//    "attention_unfused": reported by calibrate, not applied (a fused
//    FlashAttention kernel beats it; take attention from a Kineto trace);
//  - collectives: NCCL all-reduce, all-gather, reduce-scatter and all-to-all
//    over every GPU of the node (one process, ncclCommInitAll), 1 MiB to
//    1 GiB. Inter-node links need a multi-node run: take them from a PyTorch
//    profiler trace (`pipec calibrate --kineto`).
// Each point is warmed up, then timed with CUDA events over repeated runs.
// usage: pipec-calibrate-sweep -o sweep.json [--quick]
#include "pipert/cuda/CudaCheck.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Point {
  std::string kind, name;
  double flops = 0, bytes = 0, seconds = 0;
  int ranks = 0;
  int m = 0, n = 0, k = 0; // matmuls
};

// Softmax of each row of `rows` x `cols` bf16 scores, in place, one block a row.
__global__ void rowSoftmax(__nv_bfloat16 *scores, int cols, float scale) {
  __nv_bfloat16 *row = scores + size_t(blockIdx.x) * size_t(cols);
  __shared__ float shared[32];
  float local = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    local = fmaxf(local, __bfloat162float(row[c]) * scale);
  for (int o = 16; o > 0; o /= 2)
    local = fmaxf(local, __shfl_xor_sync(0xffffffff, local, o));
  if (threadIdx.x % 32 == 0)
    shared[threadIdx.x / 32] = local;
  __syncthreads();
  float maximum = -INFINITY;
  for (int w = 0; w < int(blockDim.x / 32); ++w)
    maximum = fmaxf(maximum, shared[w]);
  __syncthreads();
  float sum = 0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    sum += __expf(__bfloat162float(row[c]) * scale - maximum);
  for (int o = 16; o > 0; o /= 2)
    sum += __shfl_xor_sync(0xffffffff, sum, o);
  if (threadIdx.x % 32 == 0)
    shared[threadIdx.x / 32] = sum;
  __syncthreads();
  float total = 0;
  for (int w = 0; w < int(blockDim.x / 32); ++w)
    total += shared[w];
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    row[c] = __float2bfloat16(__expf(__bfloat162float(row[c]) * scale - maximum) / total);
}

// Seconds per run of `run` on `stream`: `warm` runs, then `reps` timed.
template <typename Run> double timeIt(cudaStream_t stream, int warm, int reps, Run run) {
  for (int i = 0; i < warm; ++i)
    run();
  cudaEvent_t start, stop;
  PIPERT_CUDA(cudaEventCreate(&start));
  PIPERT_CUDA(cudaEventCreate(&stop));
  PIPERT_CUDA(cudaEventRecord(start, stream));
  for (int i = 0; i < reps; ++i)
    run();
  PIPERT_CUDA(cudaEventRecord(stop, stream));
  PIPERT_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  PIPERT_CUDA(cudaEventElapsedTime(&ms, start, stop));
  PIPERT_CUDA(cudaEventDestroy(start));
  PIPERT_CUDA(cudaEventDestroy(stop));
  return double(ms) * 1e-3 / reps;
}

void *deviceBuffer(size_t bytes) {
  void *p = nullptr;
  PIPERT_CUDA(cudaMalloc(&p, bytes));
  PIPERT_CUDA(cudaMemset(p, 0, bytes));
  return p;
}

void sweepMatmuls(std::vector<Point> &points, bool quick) {
  cublasHandle_t blas;
  PIPERT_CUBLAS(cublasCreate(&blas));
  cudaStream_t stream;
  PIPERT_CUDA(cudaStreamCreate(&stream));
  PIPERT_CUBLAS(cublasSetStream(blas, stream));
  // (m, n, k): square sizes, then Llama-70B-like layer shapes at 4096 tokens
  // (QKV, output, MLP up and down at tp 1 and 8).
  std::vector<std::array<int, 3>> shapes = {{1024, 1024, 1024}, {2048, 2048, 2048},
                                            {4096, 4096, 4096}, {8192, 8192, 8192},
                                            {4096, 10240, 8192}, {4096, 8192, 8192},
                                            {4096, 28672, 8192}, {4096, 8192, 28672},
                                            {4096, 3584, 8192},  {4096, 8192, 3584}};
  if (quick)
    shapes.resize(3);
  for (const std::array<int, 3> &shape : shapes) {
    const int m = shape[0], n = shape[1], k = shape[2];
    size_t bytesA = size_t(m) * k * 2, bytesB = size_t(k) * n * 2, bytesC = size_t(m) * n * 2;
    void *A = deviceBuffer(bytesA), *B = deviceBuffer(bytesB), *C = deviceBuffer(bytesC);
    float one = 1, zero = 0;
    double seconds = timeIt(stream, 3, quick ? 5 : 20, [&] {
      // Column-major C (n x m) = B^T-free layout: C^T = B^T A^T, i.e. a row-major m x n product.
      PIPERT_CUBLAS(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, B, CUDA_R_16BF, n,
                                 A, CUDA_R_16BF, k, &zero, C, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT));
    });
    points.push_back({"matmul", "gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                                    std::to_string(k),
                      2.0 * m * n * k, 0, seconds, 0, m, n, k});
    PIPERT_CUDA(cudaFree(A));
    PIPERT_CUDA(cudaFree(B));
    PIPERT_CUDA(cudaFree(C));
  }
  PIPERT_CUDA(cudaStreamDestroy(stream));
  PIPERT_CUBLAS(cublasDestroy(blas));
}

void sweepAttention(std::vector<Point> &points, bool quick) {
  cublasHandle_t blas;
  PIPERT_CUBLAS(cublasCreate(&blas));
  cudaStream_t stream;
  PIPERT_CUDA(cudaStreamCreate(&stream));
  PIPERT_CUBLAS(cublasSetStream(blas, stream));
  const int heads = 32, d = 128;
  std::vector<int> lengths = quick ? std::vector<int>{1024} : std::vector<int>{1024, 2048, 4096};
  for (int s : lengths) {
    size_t qkv = size_t(heads) * s * d * 2, scores = size_t(heads) * s * s * 2;
    void *Q = deviceBuffer(qkv), *K = deviceBuffer(qkv), *V = deviceBuffer(qkv),
         *O = deviceBuffer(qkv), *S = deviceBuffer(scores);
    float one = 1, zero = 0, scale = 1.0f / std::sqrt(float(d));
    long long strideQ = (long long)s * d, strideS = (long long)s * s;
    double seconds = timeIt(stream, 2, quick ? 3 : 10, [&] {
      // Scores (s x s per head, row-major) = Q K^T.
      PIPERT_CUBLAS(cublasGemmStridedBatchedEx(
          blas, CUBLAS_OP_T, CUBLAS_OP_N, s, s, d, &one, K, CUDA_R_16BF, d, strideQ, Q,
          CUDA_R_16BF, d, strideQ, &zero, S, CUDA_R_16BF, s, strideS, heads, CUBLAS_COMPUTE_32F,
          CUBLAS_GEMM_DEFAULT));
      rowSoftmax<<<unsigned(heads) * unsigned(s), 256, 0, stream>>>(
          static_cast<__nv_bfloat16 *>(S), s, scale);
      PIPERT_CUDA_LAUNCHED();
      // Output (s x d per head) = P V.
      PIPERT_CUBLAS(cublasGemmStridedBatchedEx(
          blas, CUBLAS_OP_N, CUBLAS_OP_N, d, s, s, &one, V, CUDA_R_16BF, d, strideQ, S,
          CUDA_R_16BF, s, strideS, &zero, O, CUDA_R_16BF, d, strideQ, heads, CUBLAS_COMPUTE_32F,
          CUBLAS_GEMM_DEFAULT));
    });
    points.push_back({"attention_unfused", "sdpa unfused h32 d128 s" + std::to_string(s),
                      4.0 * heads * double(s) * s * d, 0, seconds, 0});
    for (void *p : {Q, K, V, O, S})
      PIPERT_CUDA(cudaFree(p));
  }
  PIPERT_CUDA(cudaStreamDestroy(stream));
  PIPERT_CUBLAS(cublasDestroy(blas));
}

void sweepCollectives(std::vector<Point> &points, bool quick) {
  int devices = 0;
  PIPERT_CUDA(cudaGetDeviceCount(&devices));
  if (devices < 2) {
    std::cerr << "pipec-calibrate-sweep: one GPU: no collectives measured\n";
    return;
  }
  std::vector<ncclComm_t> comms(static_cast<size_t>(devices));
  std::vector<cudaStream_t> streams(static_cast<size_t>(devices));
  std::vector<void *> send(static_cast<size_t>(devices)), recv(static_cast<size_t>(devices));
  PIPERT_NCCL(ncclCommInitAll(comms.data(), devices, nullptr), nullptr);
  size_t largest = quick ? (size_t(1) << 24) : (size_t(1) << 30);
  for (int g = 0; g < devices; ++g) {
    PIPERT_CUDA(cudaSetDevice(g));
    PIPERT_CUDA(cudaStreamCreate(&streams[size_t(g)]));
    send[size_t(g)] = deviceBuffer(largest);
    recv[size_t(g)] = deviceBuffer(largest);
  }
  const char *kinds[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
  for (const char *kind : kinds)
    for (size_t bytes = size_t(1) << 20; bytes <= largest; bytes *= 4) {
      size_t count = bytes / 2; // bf16 elements of the whole buffer
      size_t share = count / size_t(devices);
      auto once = [&] {
        PIPERT_NCCL(ncclGroupStart(), nullptr);
        for (int g = 0; g < devices; ++g) {
          ncclComm_t c = comms[size_t(g)];
          cudaStream_t st = streams[size_t(g)];
          void *in = send[size_t(g)], *out = recv[size_t(g)];
          if (!std::strcmp(kind, "all_reduce"))
            PIPERT_NCCL(ncclAllReduce(in, out, count, ncclBfloat16, ncclSum, c, st), c);
          else if (!std::strcmp(kind, "all_gather"))
            PIPERT_NCCL(ncclAllGather(in, out, share, ncclBfloat16, c, st), c);
          else if (!std::strcmp(kind, "reduce_scatter"))
            PIPERT_NCCL(ncclReduceScatter(in, out, share, ncclBfloat16, ncclSum, c, st), c);
          else
            for (int peer = 0; peer < devices; ++peer) {
              char *from = static_cast<char *>(in) + size_t(peer) * share * 2;
              char *to = static_cast<char *>(out) + size_t(peer) * share * 2;
              PIPERT_NCCL(ncclSend(from, share, ncclBfloat16, peer, c, st), c);
              PIPERT_NCCL(ncclRecv(to, share, ncclBfloat16, peer, c, st), c);
            }
        }
        PIPERT_NCCL(ncclGroupEnd(), nullptr);
      };
      for (int i = 0; i < 3; ++i)
        once();
      for (int g = 0; g < devices; ++g) {
        PIPERT_CUDA(cudaSetDevice(g));
        PIPERT_CUDA(cudaStreamSynchronize(streams[size_t(g)]));
      }
      int reps = quick ? 3 : 10;
      PIPERT_CUDA(cudaSetDevice(0));
      cudaEvent_t start, stop;
      PIPERT_CUDA(cudaEventCreate(&start));
      PIPERT_CUDA(cudaEventCreate(&stop));
      PIPERT_CUDA(cudaEventRecord(start, streams[0]));
      for (int i = 0; i < reps; ++i)
        once();
      PIPERT_CUDA(cudaSetDevice(0));
      PIPERT_CUDA(cudaEventRecord(stop, streams[0]));
      for (int g = 0; g < devices; ++g) {
        PIPERT_CUDA(cudaSetDevice(g));
        PIPERT_CUDA(cudaStreamSynchronize(streams[size_t(g)]));
      }
      PIPERT_CUDA(cudaSetDevice(0));
      float ms = 0;
      PIPERT_CUDA(cudaEventElapsedTime(&ms, start, stop));
      PIPERT_CUDA(cudaEventDestroy(start));
      PIPERT_CUDA(cudaEventDestroy(stop));
      points.push_back({kind, std::string("nccl ") + kind, 0, double(bytes),
                        double(ms) * 1e-3 / reps, devices});
    }
  for (int g = 0; g < devices; ++g) {
    PIPERT_CUDA(cudaSetDevice(g));
    PIPERT_CUDA(cudaFree(send[size_t(g)]));
    PIPERT_CUDA(cudaFree(recv[size_t(g)]));
    PIPERT_CUDA(cudaStreamDestroy(streams[size_t(g)]));
    ncclCommDestroy(comms[size_t(g)]);
  }
}

std::string json(const std::vector<Point> &points, const std::string &gpu) {
  std::ostringstream out;
  out.precision(17);
  out << "{\n  \"gpu\": \"" << gpu << "\",\n  \"measurements\": [";
  for (size_t i = 0; i < points.size(); ++i) {
    const Point &p = points[i];
    out << (i ? ",\n" : "\n") << "    {\"kind\": \"" << p.kind << "\", \"name\": \"" << p.name
        << "\", \"seconds\": " << p.seconds;
    if (p.ranks > 0)
      out << ", \"bytes\": " << p.bytes << ", \"ranks\": " << p.ranks
          << ", \"inter_node\": false";
    else
      out << ", \"flops\": " << p.flops;
    if (p.m > 0)
      out << ", \"m\": " << p.m << ", \"n\": " << p.n << ", \"k\": " << p.k;
    out << "}";
  }
  out << "\n  ]\n}\n";
  return out.str();
}

} // namespace

int main(int argc, char **argv) {
  std::string output;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-o" && i + 1 < argc)
      output = argv[++i];
    else if (arg == "--quick")
      quick = true;
    else {
      std::cerr << "usage: pipec-calibrate-sweep -o sweep.json [--quick]\n";
      return 2;
    }
  }
  if (output.empty()) {
    std::cerr << "usage: pipec-calibrate-sweep -o sweep.json [--quick]\n";
    return 2;
  }
  try {
    cudaDeviceProp prop{};
    PIPERT_CUDA(cudaGetDeviceProperties(&prop, 0));
    std::vector<Point> points;
    PIPERT_CUDA(cudaSetDevice(0));
    sweepMatmuls(points, quick);
    sweepAttention(points, quick);
    sweepCollectives(points, quick);
    std::ofstream file(output);
    file << json(points, prop.name);
    if (!file) {
      std::cerr << "pipec-calibrate-sweep: cannot write '" << output << "'\n";
      return 2;
    }
    std::cout << "wrote " << points.size() << " measurements on " << prop.name << " to " << output
              << "\n";
  } catch (const pipert::cuda::CudaError &e) {
    std::cerr << "pipec-calibrate-sweep: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
