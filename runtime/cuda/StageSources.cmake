# The CUDA runtime's sources in lists, paths relative to runtime/cuda; included
# by runtime/cuda/CMakeLists.txt and by the emulation (tests/cuda_emu), which
# compiles the same kernels for the host.
#
# The executor: host code only, compiled once (the OBJECT library
# pipert_cuda_executor) for pipert_cuda and both test builds of it.
set(PIPERT_CUDA_EXECUTOR_SOURCES
  src/Bootstrap.cpp
  src/CudaCheck.cpp
  src/CudaOptions.cpp
  src/CudaRun.cpp
  src/GradientSync.cpp
  src/InProcessTransport.cpp
  src/Launcher.cpp
  src/NcclExpertExchange.cpp
  src/NcclTransport.cpp
  src/NcclWait.cpp
  src/RankExecutor.cpp
  src/StepResults.cpp
  src/StepRunner.cpp
)
# The executor's own kernels (ExecKernels.cuh).
set(PIPERT_CUDA_EXECUTOR_KERNELS
  src/ExecKernels.cu
)
# The GPU stages (GpuStage.h): kernels, the dense and MoE stages, and the factory.
set(PIPERT_CUDA_STAGE_SOURCES
  src/GpuKernels.cu
  src/GpuMlpStage.cu
  src/GpuMoeStage.cu
  src/GpuStageFactory.cu
)
