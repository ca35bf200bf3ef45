// The GPU stages' real code -- GpuMlpStage.cu, GpuMoeStage.cu, GpuKernels.cu,
// compiled as C++, their kernels run by the kernel emulation and their GEMMs
// by HostCublas -- against the CPU Stage<double> each one twins: forward
// output, input gradient and every parameter gradient, over two micro-batches
// whose parts interleave, with the weight half now (B), deferred (I then W),
// or mixed. Also the loss kernel, CUDA-graph capture and replay of a stage's
// work, and the emulator's own barrier, shuffle and launch checks. Fresh
// device memory is filled with 0xFF here (NaN), so a read of a buffer no one
// wrote fails a comparison.
#include <catch2/catch.hpp>

#include "HostCuda.h"

#include "pipert/Loss.h"
#include "pipert/Model.h"
#include "pipert/cuda/GpuStage.h"

#include "KernelEmulation.h" // last: it defines threadIdx and friends as macros

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace pipert;
using cuda::DType;

namespace {

// Relative to the largest reference magnitude. Measured maxima over every
// case below (forward output / input gradient / parameter gradients):
//   fp32: 9.7e-8 / 1.3e-7 / 3.5e-7 -- fp32 GEMMs and kernels against fp64;
//   bf16: 3.7e-3 / 3.7e-3 / 7.7e-3 -- bf16 storage of activations, GEMM
//         operands and weight copies (2^-9 relative rounding each), fp32
//         accumulation.
constexpr double kF32Tolerance = 1e-5;
constexpr double kBf16Tolerance = 2e-2;

double tolerance(DType dtype) { return dtype == DType::F32 ? kF32Tolerance : kBf16Tolerance; }

struct Device {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  Device() {
    REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cublasCreate(&blas) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasSetStream(blas, stream) == CUBLAS_STATUS_SUCCESS);
  }
  ~Device() {
    cublasDestroy(blas);
    cudaStreamDestroy(stream);
  }
  cuda::Launch at() const { return {stream, blas}; }
};

class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) { REQUIRE(cudaMalloc(&data_, bytes) == cudaSuccess); }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  void *get() const { return data_; }
  size_t bytes() const { return bytes_; }

private:
  void *data_ = nullptr;
  size_t bytes_;
};

// "Device" memory is host memory in the emulation: read it directly.
std::vector<double> readBack(const void *data, size_t n, DType dtype) {
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = dtype == DType::F32 ? static_cast<const float *>(data)[i]
                                 : __bfloat162float(static_cast<const __nv_bfloat16 *>(data)[i]);
  return out;
}

// max |got - want| / max |want|; infinite for a NaN or a size mismatch.
double relativeError(const std::vector<double> &got, const double *want, size_t n) {
  if (got.size() != n)
    return INFINITY;
  double maxWant = 0, maxError = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i]))
      return INFINITY;
    maxWant = std::max(maxWant, std::abs(want[i]));
    maxError = std::max(maxError, std::abs(got[i] - want[i]));
  }
  return maxError == 0 ? 0 : maxError / std::max(maxWant, 1e-300);
}

// A random tokens x hidden tensor uploaded as `dtype`; the returned tensor
// holds what the device holds, so both sides start from the same numbers.
Tensor<double> uploadRandom(std::mt19937 &rng, size_t tokens, size_t hidden, DType dtype, const DeviceBuffer &to) {
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor<double> t(tokens, hidden);
  for (size_t i = 0; i < t.size(); ++i)
    t[i] = u(rng);
  cuda::uploadActivation(t.values(), to.get(), dtype, nullptr);
  std::vector<double> device = readBack(to.get(), t.size(), dtype);
  for (size_t i = 0; i < t.size(); ++i)
    t[i] = device[i];
  return t;
}

StageSpec denseSpec(int hidden, int ffn) {
  StageSpec spec;
  spec.kind = StageKind::Dense;
  spec.dense = DenseConfig{hidden, ffn, false};
  return spec;
}

StageSpec moeSpec(int hidden, int ffn, int experts, int topK) {
  StageSpec spec;
  spec.kind = StageKind::Moe;
  spec.moe = MoeConfig{hidden, ffn, experts, topK, false};
  return spec;
}

// When each micro-batch's weight half runs: both with the backward (B), both
// deferred to W (I then W, W in reverse order), or mb 1 deferred and mb 0 not.
enum class Weights { Now, Deferred, Mixed };

const char *weightsName(Weights w) {
  return w == Weights::Now ? "B (WeightGrad::Now)" : w == Weights::Deferred ? "I then W" : "mixed";
}

struct Comparison {
  std::string what;
  double error;
};

// Runs micro-batches 0 and 1 through the GPU stage and the CPU stage, each
// part of mb 0 next to the same part of mb 1, and compares everything the
// stage produces. Protocol bookkeeping is checked on the way.
// `rows` may give the two micro-batches different row counts (sizes).
std::vector<Comparison> runTwoMicroBatches(const StageSpec &spec, const cuda::MicroBatchRows &rows, DType dtype,
                                           Weights weights) {
  ModelSpec model;
  model.seed = 11;
  model.stages = {spec};
  std::unique_ptr<Stage<double>> source = makeStage<double>(model, 0), cpu = makeStage<double>(model, 0);
  Device device;
  const size_t baseline = hostcuda::liveStreamOrderedAllocations();
  std::unique_ptr<cuda::GpuStage> gpu = cuda::makeGpuStage(*source, spec, rows, dtype);
  const size_t h = size_t(spec.hidden()), t0 = size_t(rows.of(0)), t1 = size_t(rows.of(1));
  const size_t n = t0 * h, n1 = t1 * h, bytes = n * cuda::dtypeBytes(dtype), bytes1 = n1 * cuda::dtypeBytes(dtype);

  std::mt19937 rng(5);
  DeviceBuffer x0d(bytes), x1d(bytes1), dy0d(bytes), dy1d(bytes1), y0d(bytes), y1d(bytes1), dx0d(bytes),
      dx1d(bytes1);
  Tensor<double> x0 = uploadRandom(rng, t0, h, dtype, x0d);
  Tensor<double> x1 = uploadRandom(rng, t1, h, dtype, x1d);
  Tensor<double> dy0 = uploadRandom(rng, t0, h, dtype, dy0d);
  Tensor<double> dy1 = uploadRandom(rng, t1, h, dtype, dy1d);
  Tensor<double> y0, y1, dx0, dx1;

  for (SubOp part : kForwardParts) {
    cpu->forwardPart(0, part, x0, y0);
    gpu->forwardPart(0, part, x0d.get(), y0d.get(), device.at());
    cpu->forwardPart(1, part, x1, y1);
    gpu->forwardPart(1, part, x1d.get(), y1d.get(), device.at());
  }
  REQUIRE(gpu->storedMicroBatches() == 2);

  const WeightGrad when0 = weights == Weights::Deferred ? WeightGrad::Deferred : WeightGrad::Now;
  const WeightGrad when1 = weights == Weights::Now ? WeightGrad::Now : WeightGrad::Deferred;
  for (SubOp part : kBackwardParts) {
    cpu->backwardPart(1, part, dy1, dx1, when1);
    gpu->backwardPart(1, part, dy1d.get(), dx1d.get(), when1, device.at());
    cpu->backwardPart(0, part, dy0, dx0, when0);
    gpu->backwardPart(0, part, dy0d.get(), dx0d.get(), when0, device.at());
  }
  const size_t deferred = (when0 == WeightGrad::Deferred) + (when1 == WeightGrad::Deferred);
  REQUIRE(gpu->storedMicroBatches() == deferred);
  if (when1 == WeightGrad::Deferred) {
    cpu->backwardWeight(1);
    gpu->backwardWeight(1, device.at());
  }
  if (when0 == WeightGrad::Deferred) {
    cpu->backwardWeight(0);
    gpu->backwardWeight(0, device.at());
  }
  REQUIRE(gpu->storedMicroBatches() == 0);
  // Every per-micro-batch buffer was released after its last part.
  REQUIRE(hostcuda::liveStreamOrderedAllocations() == baseline);

  std::vector<Comparison> out = {
      {"forward output, mb 0", relativeError(readBack(y0d.get(), n, dtype), y0.data(), n)},
      {"forward output, mb 1", relativeError(readBack(y1d.get(), n1, dtype), y1.data(), n1)},
      {"input gradient, mb 0", relativeError(readBack(dx0d.get(), n, dtype), dx0.data(), n)},
      {"input gradient, mb 1", relativeError(readBack(dx1d.get(), n1, dtype), dx1.data(), n1)},
  };
  std::vector<Parameter<double>> params = cpu->parameters();
  std::vector<cuda::DeviceGradient> grads = gpu->gradients();
  REQUIRE(grads.size() == params.size());
  for (size_t p = 0; p < params.size(); ++p) {
    INFO("parameter " << p);
    REQUIRE(grads[p].name == params[p].name);
    REQUIRE(grads[p].rows == params[p].grad->rows());
    REQUIRE(grads[p].cols == params[p].grad->cols());
    std::vector<double> got(grads[p].data, grads[p].data + grads[p].rows * grads[p].cols);
    out.push_back({"gradient " + params[p].name, relativeError(got, params[p].grad->data(), got.size())});
  }

  gpu->zeroGradients(device.at());
  for (const cuda::DeviceGradient &g : gpu->gradients())
    for (size_t i = 0; i < g.rows * g.cols; ++i)
      REQUIRE(g.data[i] == 0.0f);
  return out;
}

std::vector<Comparison> runTwoMicroBatches(const StageSpec &spec, int tokens, DType dtype, Weights weights) {
  return runTwoMicroBatches(spec, cuda::MicroBatchRows{tokens, {}}, dtype, weights);
}

void checkAll(const std::vector<Comparison> &comparisons, DType dtype) {
  for (const Comparison &c : comparisons) {
    INFO(c.what << ": relative error " << c.error << ", tolerance " << tolerance(dtype));
    CHECK(c.error <= tolerance(dtype));
  }
}

} // namespace

TEST_CASE("dense GPU stage matches the CPU stage", "[cuda-emulated]") {
  const DType dtype = GENERATE(DType::F32, DType::BF16);
  const Weights weights = GENERATE(Weights::Now, Weights::Deferred, Weights::Mixed);
  INFO("dense h=8 ffn=32, 20 tokens, " << cuda::dtypeName(dtype) << ", " << weightsName(weights));
  checkAll(runTwoMicroBatches(denseSpec(8, 32), 20, dtype, weights), dtype);
}

TEST_CASE("MoE GPU stage, top-2 of 4 experts, matches the CPU stage", "[cuda-emulated]") {
  const DType dtype = GENERATE(DType::F32, DType::BF16);
  const Weights weights = GENERATE(Weights::Now, Weights::Deferred, Weights::Mixed);
  INFO("moe h=8 ffn=16 E=4 top-2, 20 tokens, " << cuda::dtypeName(dtype) << ", " << weightsName(weights));
  checkAll(runTwoMicroBatches(moeSpec(8, 16, 4, 2), 20, dtype, weights), dtype);
}

// planExpertRows scans the tokens in chunks of one block (256 threads): 300
// tokens make each expert's row positions carry over from the first chunk.
TEST_CASE("MoE GPU stage with more tokens than one scan chunk", "[cuda-emulated]") {
  const DType dtype = GENERATE(DType::F32, DType::BF16);
  INFO("moe h=8 ffn=16 E=4 top-2, 300 tokens, " << cuda::dtypeName(dtype));
  checkAll(runTwoMicroBatches(moeSpec(8, 16, 4, 2), 300, dtype, Weights::Mixed), dtype);
}

// Rows wider than a warp: the gate gradient's warp reduction covers lanes
// 16-31 and lanes loop over several columns; column sums span several blocks.
TEST_CASE("GPU stages with hidden sizes wider than a warp", "[cuda-emulated]") {
  const DType dtype = GENERATE(DType::F32, DType::BF16);
  SECTION("dense h=40 ffn=72") { checkAll(runTwoMicroBatches(denseSpec(40, 72), 12, dtype, Weights::Mixed), dtype); }
  SECTION("moe h=40 ffn=36 E=4 top-2") {
    checkAll(runTwoMicroBatches(moeSpec(40, 36, 4, 2), 12, dtype, Weights::Mixed), dtype);
  }
}

TEST_CASE("MoE GPU stage, top-1 and top-all", "[cuda-emulated]") {
  const DType dtype = GENERATE(DType::F32, DType::BF16);
  SECTION("top-1 of 5, h=12") { checkAll(runTwoMicroBatches(moeSpec(12, 10, 5, 1), 33, dtype, Weights::Mixed), dtype); }
  SECTION("top-3 of 3, h=6") { checkAll(runTwoMicroBatches(moeSpec(6, 9, 3, 3), 7, dtype, Weights::Mixed), dtype); }
}

// Per-micro-batch sizes: micro-batch 0 has 3 x 5 rows, micro-batch 1 has 5
// (the MoE capacity, expert buffers and GEMM rows follow each micro-batch).
TEST_CASE("GPU stages run micro-batches of different sizes", "[cuda-emulated]") {
  const DType dtype = GENERATE(DType::F32, DType::BF16);
  const cuda::MicroBatchRows rows{5, {3, 1}};
  SECTION("dense") { checkAll(runTwoMicroBatches(denseSpec(8, 24), rows, dtype, Weights::Mixed), dtype); }
  SECTION("moe top-2 of 4") { checkAll(runTwoMicroBatches(moeSpec(8, 16, 4, 2), rows, dtype, Weights::Mixed), dtype); }
}

TEST_CASE("GPU MSE loss matches pipert's mseLoss", "[cuda-emulated]") {
  // 2400 elements: 10 blocks; 270000 (fp32 only, 1024 blocks of 256 emulated
  // threads take 1-2 s): more than the 1024 blocks of partial sums.
  const auto [dtype, tokens] = GENERATE(std::make_pair(DType::F32, size_t(300)),
                                        std::make_pair(DType::BF16, size_t(300)),
                                        std::make_pair(DType::F32, size_t(33750)));
  const size_t hidden = 8, n = tokens * hidden;
  INFO(cuda::dtypeName(dtype) << ", " << n << " elements");
  const size_t bytes = n * cuda::dtypeBytes(dtype);
  Device device;
  std::mt19937 rng(7);
  DeviceBuffer yd(bytes), td(bytes), dyd(bytes), lossd(sizeof(double));
  const Tensor<double> y = uploadRandom(rng, tokens, hidden, dtype, yd);
  const Tensor<double> t = uploadRandom(rng, tokens, hidden, dtype, td);
  *static_cast<double *>(lossd.get()) = 0.25; // the loss accumulates
  cuda::mseLossAndGrad(yd.get(), td.get(), dyd.get(), static_cast<double *>(lossd.get()), tokens, hidden, dtype,
                       device.stream);
  const double want = 0.25 + mseLoss(y, t);
  CHECK(std::abs(*static_cast<double *>(lossd.get()) - want) <= 1e-12 * want); // fp64 sums, another order
  Tensor<double> dy;
  mseLossGrad(y, t, dy);
  // fp32: the 2/n scale rounded to fp32; bf16: dy rounded to bf16 (2^-9).
  CHECK(relativeError(readBack(dyd.get(), n, dtype), dy.data(), n) <= (dtype == DType::F32 ? 1e-6 : 5e-3));
}

TEST_CASE("a captured graph replays a GPU stage's work bit for bit", "[cuda-emulated]") {
  const StageSpec spec = moeSpec(8, 16, 4, 2);
  const int tokens = 20;
  const DType dtype = GENERATE(DType::F32, DType::BF16);
  INFO(cuda::dtypeName(dtype));
  ModelSpec model;
  model.seed = 3;
  model.stages = {spec};
  std::unique_ptr<Stage<double>> source = makeStage<double>(model, 0);
  std::unique_ptr<cuda::GpuStage> eager = cuda::makeGpuStage(*source, spec, tokens, dtype);
  std::unique_ptr<cuda::GpuStage> graphed = cuda::makeGpuStage(*source, spec, tokens, dtype);
  Device device;
  const size_t n = size_t(tokens) * size_t(spec.hidden()), bytes = n * cuda::dtypeBytes(dtype);
  std::mt19937 rng(9);
  DeviceBuffer x(bytes), target(bytes), yEager(bytes), dxEager(bytes), yGraph(bytes), dxGraph(bytes);
  DeviceBuffer dyEager(bytes), dyGraph(bytes), lossEager(sizeof(double)), lossGraph(sizeof(double));
  uploadRandom(rng, size_t(tokens), size_t(spec.hidden()), dtype, x);
  uploadRandom(rng, size_t(tokens), size_t(spec.hidden()), dtype, target);

  // One whole training step of one micro-batch, with the loss in between.
  auto step = [&](cuda::GpuStage &stage, const DeviceBuffer &y, const DeviceBuffer &dy, const DeviceBuffer &dx,
                  const DeviceBuffer &loss) {
    REQUIRE(cudaMemsetAsync(loss.get(), 0, sizeof(double), device.stream) == cudaSuccess);
    stage.zeroGradients(device.at());
    for (SubOp part : kForwardParts)
      stage.forwardPart(0, part, x.get(), y.get(), device.at());
    cuda::mseLossAndGrad(y.get(), target.get(), dy.get(), static_cast<double *>(loss.get()), size_t(tokens),
                         size_t(spec.hidden()), dtype, device.stream);
    for (SubOp part : kBackwardParts)
      stage.backwardPart(0, part, dy.get(), dx.get(), WeightGrad::Now, device.at());
  };
  step(*eager, yEager, dyEager, dxEager, lossEager);

  REQUIRE(cudaStreamBeginCapture(device.stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  step(*graphed, yGraph, dyGraph, dxGraph, lossGraph);
  cudaGraph_t graph;
  REQUIRE(cudaStreamEndCapture(device.stream, &graph) == cudaSuccess);
  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(graph) == cudaSuccess);
  // Capture only recorded: the output still holds the fill of fresh memory.
  const std::vector<unsigned char> fresh(bytes, 0xFF);
  CHECK(std::memcmp(yGraph.get(), fresh.data(), bytes) == 0);

  auto sameBits = [](const DeviceBuffer &a, const DeviceBuffer &b) {
    return std::memcmp(a.get(), b.get(), a.bytes()) == 0;
  };
  for (int replay = 1; replay <= 2; ++replay) {
    INFO("replay " << replay);
    REQUIRE(cudaGraphLaunch(exec, device.stream) == cudaSuccess);
    CHECK(sameBits(yGraph, yEager));
    CHECK(sameBits(dxGraph, dxEager));
    CHECK(sameBits(lossGraph, lossEager));
    std::vector<cuda::DeviceGradient> want = eager->gradients(), got = graphed->gradients();
    REQUIRE(got.size() == want.size());
    for (size_t p = 0; p < got.size(); ++p)
      CHECK(std::memcmp(got[p].data, want[p].data, got[p].rows * got[p].cols * sizeof(float)) == 0);
  }
  REQUIRE(cudaGraphExecDestroy(exec) == cudaSuccess);
}

TEST_CASE("GPU stage protocol misuse throws before enqueuing", "[cuda-emulated]") {
  const StageSpec spec = denseSpec(8, 32);
  ModelSpec model;
  model.stages = {spec};
  std::unique_ptr<Stage<double>> source = makeStage<double>(model, 0);
  std::unique_ptr<cuda::GpuStage> gpu = cuda::makeGpuStage(*source, spec, 4, DType::F32);
  Device device;
  DeviceBuffer a(4 * 8 * sizeof(float)), b(4 * 8 * sizeof(float));
  CHECK_THROWS_AS(gpu->backwardPart(7, SubOp::Combine, a.get(), b.get(), WeightGrad::Now, device.at()),
                  std::logic_error);
  CHECK_THROWS_AS(gpu->backwardWeight(0, device.at()), std::logic_error);
  CHECK(gpu->storedMicroBatches() == 0);
}

// ---- the emulator itself ----

namespace {

// Inclusive prefix sums over one block: warp scans by __shfl_up_sync, warp
// totals through __shared__ memory between two barriers.
void blockScanKernel(const int *in, int *out) {
  __shared__ int warpTotals[32];
  const int linear = static_cast<int>(threadIdx.x + threadIdx.y * blockDim.x);
  const int lane = linear % 32, warp = linear / 32;
  int x = in[blockIdx.x * blockDim.x * blockDim.y + linear];
  for (int offset = 1; offset < 32; offset <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, x, offset);
    if (lane >= offset)
      x += y;
  }
  if (lane == 31)
    warpTotals[warp] = x;
  __syncthreads();
  for (int w = 0; w < warp; ++w)
    x += warpTotals[w];
  __syncthreads();
  out[blockIdx.x * blockDim.x * blockDim.y + linear] = x;
}

// Sum over a warp by __shfl_xor_sync, written by lane 0; other threads return early.
void warpSumKernel(const float *in, float *out, int warps) {
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  if (warp >= warps) // uniform across the warp
    return;
  float acc = in[threadIdx.x];
  for (int offset = 16; offset > 0; offset >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (lane == 0)
    out[warp] = acc;
}

} // namespace

TEST_CASE("kernel emulation: barriers, shuffles, shared memory, 2-D blocks", "[cuda-emulated]") {
  constexpr int kBlocks = 3, kX = 32, kY = 3; // 3 warps per block
  std::vector<int> in(kBlocks * kX * kY), out(in.size(), -1);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<int>(i * 7 % 13) - 6;
  const int *inp = in.data();
  int *outp = out.data();
  emu::launch(dim3(kBlocks), dim3(kX, kY), nullptr, [=] { blockScanKernel(inp, outp); });
  REQUIRE(cudaGetLastError() == cudaSuccess);
  for (int b = 0; b < kBlocks; ++b) {
    int sum = 0;
    for (int i = 0; i < kX * kY; ++i) {
      sum += in[size_t(b * kX * kY + i)];
      INFO("block " << b << ", thread " << i);
      REQUIRE(out[size_t(b * kX * kY + i)] == sum);
    }
  }

  std::vector<float> values(128), sums(4, -1.0f);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i % 9);
  const float *vp = values.data();
  float *sp = sums.data();
  emu::launch(dim3(1), dim3(128), nullptr, [=] { warpSumKernel(vp, sp, 3); });
  for (int w = 0; w < 3; ++w) {
    float want = 0;
    for (int l = 0; l < 32; ++l)
      want += values[size_t(w * 32 + l)];
    CHECK(sums[size_t(w)] == want);
  }
  CHECK(sums[3] == -1.0f);
}

TEST_CASE("kernel emulation: a bad configuration is reported, a captured launch waits for the replay",
          "[cuda-emulated]") {
  int runs = 0;
  int *counter = &runs;
  emu::launch(dim3(1), dim3(2048), nullptr, [=] { ++*counter; });
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  CHECK(cudaGetLastError() == cudaSuccess); // reading the error clears it
  emu::launch(dim3(0), dim3(32), nullptr, [=] { ++*counter; });
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  CHECK(runs == 0);

  cudaStream_t stream;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  emu::launch(dim3(2), dim3(4, 2), stream, [=] {
    if (threadIdx.x == 0 && threadIdx.y == 0)
      ++*counter; // once per block
  });
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  REQUIRE(cudaStreamEndCapture(stream, &graph) == cudaSuccess);
  CHECK(runs == 0);
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, stream) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, stream) == cudaSuccess);
  CHECK(runs == 4);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

namespace {

// What an Offload and a Reload do with a stage's stored buffers (as
// RankExecutor::runMemoryOp): each into pinned host memory, the device buffer
// freed; then fresh device buffers filled back from the host. `damage` flips
// one byte of the first host copy in between (a negative control).
void offloadAndReload(cuda::GpuStage &stage, int mb, const Device &device, bool damage) {
  std::vector<cuda::StoredBuffer> buffers = stage.takeStored(mb, device.at());
  REQUIRE(!buffers.empty());
  std::vector<void *> host(buffers.size());
  for (size_t k = 0; k < buffers.size(); ++k) {
    REQUIRE(cudaMallocHost(&host[k], buffers[k].bytes) == cudaSuccess);
    REQUIRE(cudaMemcpyAsync(host[k], buffers[k].data, buffers[k].bytes, cudaMemcpyDeviceToHost,
                            device.stream) == cudaSuccess);
    REQUIRE(cudaFreeAsync(buffers[k].data, device.stream) == cudaSuccess);
    buffers[k].data = nullptr;
  }
  if (damage)
    static_cast<unsigned char *>(host[0])[0] ^= 0x40;
  for (size_t k = 0; k < buffers.size(); ++k) {
    REQUIRE(cudaMallocAsync(&buffers[k].data, buffers[k].bytes, device.stream) == cudaSuccess);
    REQUIRE(cudaMemcpyAsync(buffers[k].data, host[k], buffers[k].bytes, cudaMemcpyHostToDevice,
                            device.stream) == cudaSuccess);
  }
  stage.putStored(mb, buffers, device.at());
  for (void *h : host)
    REQUIRE(cudaFreeHost(h) == cudaSuccess);
}

// Forward mb 0 and 1, offload mb 0 (and reload it) between its forward and
// its backward, backward both; returns the input gradient of mb 0 and every
// parameter gradient, as bytes.
std::vector<unsigned char> runWithOffload(const StageSpec &spec, DType dtype, bool offload, bool damage) {
  ModelSpec model;
  model.seed = 13;
  model.stages = {spec};
  std::unique_ptr<Stage<double>> source = makeStage<double>(model, 0);
  const int tokens = 12;
  Device device;
  const size_t baseline = hostcuda::liveStreamOrderedAllocations();
  const long pinnedBefore = hostcuda::liveHandles().pinned;
  std::unique_ptr<cuda::GpuStage> gpu = cuda::makeGpuStage(*source, spec, tokens, dtype);
  const size_t n = size_t(tokens) * size_t(spec.hidden()), bytes = n * cuda::dtypeBytes(dtype);
  std::mt19937 rng(21);
  DeviceBuffer x0(bytes), x1(bytes), dy0(bytes), dy1(bytes), y0(bytes), y1(bytes), dx0(bytes), dx1(bytes);
  for (const DeviceBuffer *b : {&x0, &x1, &dy0, &dy1})
    uploadRandom(rng, size_t(tokens), size_t(spec.hidden()), dtype, *b);
  for (SubOp part : kForwardParts) {
    gpu->forwardPart(0, part, x0.get(), y0.get(), device.at());
    gpu->forwardPart(1, part, x1.get(), y1.get(), device.at());
  }
  if (offload) {
    std::vector<cuda::StoredBuffer> none;
    // Not before its forward completes, and mb 0 is not stored while it is away.
    REQUIRE_THROWS_AS(gpu->putStored(0, none, device.at()), std::logic_error);
    std::vector<cuda::StoredBuffer> taken = gpu->takeStored(0, device.at());
    REQUIRE(gpu->storedMicroBatches() == 1);
    REQUIRE_THROWS_AS(gpu->backwardPart(0, SubOp::Combine, dy0.get(), dx0.get(), WeightGrad::Now, device.at()),
                      std::logic_error);
    REQUIRE_THROWS_AS(gpu->takeStored(0, device.at()), std::logic_error);
    gpu->putStored(0, taken, device.at()); // straight back: nothing moved
    REQUIRE(gpu->storedMicroBatches() == 2);
    offloadAndReload(*gpu, 0, device, damage);
    REQUIRE(gpu->storedMicroBatches() == 2);
  }
  for (SubOp part : kBackwardParts) {
    gpu->backwardPart(1, part, dy1.get(), dx1.get(), WeightGrad::Now, device.at());
    gpu->backwardPart(0, part, dy0.get(), dx0.get(), WeightGrad::Deferred, device.at());
  }
  if (offload) // a backward part has run: too late to offload
    REQUIRE_THROWS_AS(gpu->takeStored(0, device.at()), std::logic_error);
  gpu->backwardWeight(0, device.at());
  REQUIRE(gpu->storedMicroBatches() == 0);
  REQUIRE(hostcuda::liveStreamOrderedAllocations() == baseline);
  REQUIRE(hostcuda::liveHandles().pinned == pinnedBefore);
  const unsigned char *dx = static_cast<const unsigned char *>(dx0.get());
  std::vector<unsigned char> out(dx, dx + bytes);
  for (const cuda::DeviceGradient &g : gpu->gradients()) {
    const unsigned char *p = reinterpret_cast<const unsigned char *>(g.data);
    out.insert(out.end(), p, p + g.rows * g.cols * sizeof(float));
  }
  return out;
}

} // namespace

// Offload/Reload of a GPU stage's stored buffers: every buffer the backward
// needs travels (fresh device memory is 0xFF here, so a buffer left out or
// cut short would show), gradients come out bit for bit as without the trip,
// and one flipped byte in a host copy changes them (the comparison can fail).
TEST_CASE("GPU stage offload and reload keep gradients bit-identical", "[cuda-emulated]") {
  const DType dtype = GENERATE(DType::F32, DType::BF16);
  const bool moe = GENERATE(false, true);
  const StageSpec spec = moe ? moeSpec(8, 16, 4, 2) : denseSpec(8, 24);
  INFO((moe ? "moe" : "dense") << ", " << cuda::dtypeName(dtype));
  const std::vector<unsigned char> plain = runWithOffload(spec, dtype, false, false);
  CHECK(runWithOffload(spec, dtype, true, false) == plain);
  CHECK(runWithOffload(spec, dtype, true, true) != plain);
}
