// Runs CUDA kernels compiled as host C++ (KernelEmulation.h): each launch is
// a stream operation; its blocks run in order, and the threads of a block are
// ucontext fibers scheduled round robin on the launching host thread. A fiber
// runs until it returns or reaches __syncthreads or a shuffle; when no fiber
// can run, the scheduler releases the warps whose shuffle is complete, else
// the block barrier once every live thread is at it, else reports a deadlock.
#include "KernelEmulation.h"

#include "HostCuda.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pipert::emu {

namespace {

constexpr int kWarpSize = 32;
constexpr size_t kStackBytes = size_t(256) << 10; // kernels are shallow; only touched pages are used

enum class State { Runnable, AtBarrier, AtShuffle, Returned };

struct Fiber {
  ucontext_t context;
  char *stack = nullptr; // kStackBytes above a guard page, kept for later launches
  ThreadPosition where;
  int linear = 0; // x + y * blockDim.x + z * blockDim.x * blockDim.y: warps are 32 consecutive ones
  State state = State::Returned;
  unsigned mask = 0;   // at a shuffle: the lanes it waits for,
  uint64_t bits = 0;   // its value (the result once released),
  int sourceLane = 0;  // and the lane it reads
};

// The running grid. One at a time (launchMutex): __shared__ variables are
// static, and `current` is what threadIdx and friends read.
std::mutex launchMutex;
std::vector<std::unique_ptr<Fiber>> fibers; // grows to the largest block
ucontext_t scheduler;
Fiber *current = nullptr;
const std::function<void()> *runningKernel = nullptr;

[[noreturn]] void fail(const std::string &what) {
  std::fprintf(stderr, "pipert kernel emulation: %s\n", what.c_str());
  std::abort();
}

std::string blockName(const uint3 &b) {
  return "block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," + std::to_string(b.z) + ")";
}

char *newStack() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void *p = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED)
    fail("cannot map a fiber stack");
  mprotect(p, page, PROT_NONE); // an overflow faults instead of corrupting the next stack
  return static_cast<char *>(p) + page;
}

void fiberMain() {
  (*runningKernel)();
  current->state = State::Returned; // back to `scheduler` through uc_link
}

void suspend(State why) {
  if (!current)
    fail("__syncthreads or a shuffle outside a kernel");
  Fiber *self = current;
  self->state = why;
  swapcontext(&self->context, &scheduler);
}

// Releases each warp whose shuffle every lane of its mask has reached; true
// if one was released. A shuffle that can never complete is an error.
bool releaseShuffles(int threads, const uint3 &block) {
  bool released = false;
  for (int first = 0; first < threads; first += kWarpSize) {
    const int lanes = std::min(kWarpSize, threads - first);
    auto warp = [first](int lane) { return fibers[size_t(first + lane)].get(); };
    const Fiber *any = nullptr;
    for (int l = 0; l < lanes; ++l)
      if (warp(l)->state == State::AtShuffle)
        any = warp(l);
    if (!any)
      continue;
    const unsigned mask = any->mask;
    const std::string where = blockName(block) + ", warp " + std::to_string(first / kWarpSize) + ": ";
    bool ready = true;
    for (int l = 0; l < kWarpSize; ++l) {
      const bool named = (mask >> l) & 1u;
      if (l >= lanes) {
        if (named)
          fail(where + "a shuffle mask names lane " + std::to_string(l) + ", which the block does not have");
        continue;
      }
      const Fiber &f = *warp(l);
      if (f.state == State::AtShuffle && (f.mask != mask || !named))
        fail(where + "lanes shuffle with different masks, or a lane outside its own mask");
      if (named && f.state == State::Returned)
        fail(where + "a shuffle waits for lane " + std::to_string(l) + ", which has returned");
      if (named && f.state != State::AtShuffle)
        ready = false;
    }
    if (!ready)
      continue;
    uint64_t results[kWarpSize];
    for (int l = 0; l < lanes; ++l)
      if ((mask >> l) & 1u) {
        const int source = warp(l)->sourceLane;
        if (source < 0 || source >= lanes || !((mask >> source) & 1u))
          fail(where + "lane " + std::to_string(l) + " reads lane " + std::to_string(source) +
               ", which is not in the shuffle");
        results[l] = warp(source)->bits;
      }
    for (int l = 0; l < lanes; ++l)
      if ((mask >> l) & 1u) {
        warp(l)->bits = results[l];
        warp(l)->state = State::Runnable;
      }
    released = true;
  }
  return released;
}

void runBlock(const uint3 &block, const dim3 &grid, const dim3 &size) {
  const int threads = static_cast<int>(size.x * size.y * size.z);
  for (int i = 0; i < threads; ++i) {
    Fiber &f = *fibers[size_t(i)];
    const unsigned u = static_cast<unsigned>(i);
    f.where = {{u % size.x, u / size.x % size.y, u / (size.x * size.y)}, block, size, grid};
    f.linear = i;
    f.state = State::Runnable;
    f.context.uc_stack.ss_sp = f.stack; // a context once saved can be made again: no getcontext per block
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = &scheduler;
    makecontext(&f.context, fiberMain, 0);
  }
  for (;;) {
    for (int i = 0; i < threads; ++i)
      if (fibers[size_t(i)]->state == State::Runnable) {
        current = fibers[size_t(i)].get();
        swapcontext(&scheduler, &current->context);
      }
    current = nullptr;
    if (releaseShuffles(threads, block))
      continue;
    int atBarrier = 0, atShuffle = 0, returned = 0;
    for (int i = 0; i < threads; ++i) {
      const State s = fibers[size_t(i)]->state;
      atBarrier += s == State::AtBarrier;
      atShuffle += s == State::AtShuffle;
      returned += s == State::Returned;
    }
    if (returned == threads)
      return;
    if (atBarrier + returned == threads) { // returned threads do not hold a barrier up
      for (int i = 0; i < threads; ++i)
        if (fibers[size_t(i)]->state == State::AtBarrier)
          fibers[size_t(i)]->state = State::Runnable;
      continue;
    }
    fail(blockName(block) + " cannot go on: " + std::to_string(atBarrier) + " threads at __syncthreads, " +
         std::to_string(atShuffle) + " at a shuffle no warp completes, " + std::to_string(returned) + " returned");
  }
}

void runGrid(const dim3 &grid, const dim3 &size, const std::function<void()> &kernel) {
  std::lock_guard<std::mutex> lock(launchMutex);
  const size_t threads = size_t(size.x) * size.y * size.z;
  while (fibers.size() < threads) {
    fibers.push_back(std::make_unique<Fiber>());
    fibers.back()->stack = newStack();
    getcontext(&fibers.back()->context);
  }
  runningKernel = &kernel;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x)
        runBlock({x, y, z}, grid, size);
  runningKernel = nullptr;
}

bool validConfiguration(const dim3 &grid, const dim3 &block) {
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  return threads >= 1 && threads <= 1024 && block.x <= 1024 && block.y <= 1024 && block.z <= 64 && grid.x >= 1 &&
         grid.x <= 0x7fffffffu && grid.y >= 1 && grid.y <= 65535 && grid.z >= 1 && grid.z <= 65535;
}

// Fresh device memory is left undefined on a GPU; 0xFF makes any read of a
// buffer nothing wrote show up (NaN floats, -1 ints) in the emulated stages.
[[maybe_unused]] const bool poisonFreshMemory = (hostcuda::fillNewAllocations(0xFF), true);

} // namespace

const ThreadPosition &position() {
  if (!current)
    fail("threadIdx, blockIdx, blockDim or gridDim read outside a kernel");
  return current->where;
}

int laneId() {
  position(); // fails outside a kernel
  return current->linear % kWarpSize;
}

void syncThreads() { suspend(State::AtBarrier); }

uint64_t shuffleBits(unsigned mask, uint64_t bits, int sourceLane) {
  if (!current)
    fail("a shuffle outside a kernel");
  current->mask = mask;
  current->bits = bits;
  current->sourceLane = sourceLane;
  Fiber *self = current;
  suspend(State::AtShuffle);
  return self->bits;
}

// The stream does not matter: every stream operation runs when enqueued.
void launch(dim3 grid, dim3 block, cudaStream_t, std::function<void()> kernel) {
  if (!validConfiguration(grid, block)) {
    hostcuda::setLastError(cudaErrorInvalidConfiguration);
    return;
  }
  hostcuda::enqueue([grid, block, kernel = std::move(kernel)] { runGrid(grid, block, kernel); });
}

} // namespace pipert::emu
