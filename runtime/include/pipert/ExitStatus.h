// The exit statuses of emitted programs, CPU and CUDA alike, as their --help
// lists them, so that a launcher or CI script can tell a wrong result from a
// bad command line, a hang that was cut short, and a failing device.
#pragma once

namespace pipert {

constexpr int kExitOk = 0;
constexpr int kExitCheckFailed = 1; // the result differs from the reference
constexpr int kExitUsage = 2;       // bad option, environment, program table or I/O
constexpr int kExitTimeout = 3;     // a wait timed out (watchdog, NCCL aborted)
constexpr int kExitDeviceError = 4; // CUDA, cuBLAS or NCCL error; on the CPU, a rank failed
constexpr int kExitNoDevice = 77;   // a CUDA program on a machine without a GPU (ctest's skip)

} // namespace pipert
