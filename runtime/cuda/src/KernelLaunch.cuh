// PIPERT_LAUNCH(kernel, grid, block, stream, args...): a kernel launch that
// can also be compiled by a host C++ compiler. Under nvcc it is exactly
// kernel<<<grid, block, 0, stream>>>(args...). Compiled as C++ with the kernel
// emulation (tests/cuda_emu/KernelEmulation.h, force-included), it hands the
// call to pipert::emu::launch, capturing the arguments by value: the launch is
// a stream operation, and a captured CUDA graph replays it after this frame is
// gone. Either way, follow it with PIPERT_CUDA_LAUNCHED().
#pragma once

#if defined(__CUDACC__)
#define PIPERT_LAUNCH(kernel, grid, block, stream, ...) kernel<<<(grid), (block), 0, (stream)>>>(__VA_ARGS__)
#elif defined(PIPERT_KERNEL_EMULATION)
#define PIPERT_LAUNCH(kernel, grid, block, stream, ...)                                           \
  ::pipert::emu::launch((grid), (block), (stream), [=] { kernel(__VA_ARGS__); })
#else
#error "kernel launches need nvcc, or the host kernel emulation (tests/cuda_emu/KernelEmulation.h)"
#endif
