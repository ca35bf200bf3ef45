# The GPU stages (GpuStage.h): kernels, the dense and MoE stages, and the
# factory. Paths relative to runtime/cuda; included by runtime/cuda/CMakeLists.txt.
set(PIPERT_CUDA_STAGE_SOURCES
  src/GpuKernels.cu
  src/GpuMlpStage.cu
  src/GpuMoeStage.cu
  src/GpuStageFactory.cu
)
