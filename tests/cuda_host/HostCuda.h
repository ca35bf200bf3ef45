// A host simulation of the CUDA runtime, cuBLAS and NCCL entry points the CUDA
// executor calls, for testing the executor (runtime/cuda/src: stream commands,
// buffers, the in-process transport, gradient sync, CUDA-graph capture and
// replay, the reference check) on a machine without a GPU.
//
// Semantics: "device" memory is host memory; every stream operation runs at
// once, when it is enqueued. That is a valid execution of a stream program:
// each rank's commands are enqueued in an order where every wait follows its
// record, and a receive is enqueued only after its send. Under stream capture
// operations are recorded instead, and a graph launch replays them in order
// (allocations made during capture stay for the graph's life, as the graph's
// own memory does on a GPU). NCCL is absent: its calls fail.
#pragma once

#include <functional>

namespace pipert::hostcuda {

// Runs `work` now, or records it while a stream is being captured.
void enqueue(std::function<void()> work);

} // namespace pipert::hostcuda
