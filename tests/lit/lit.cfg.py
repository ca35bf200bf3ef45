# Golden tests for pipec. Each test is one file with RUN: lines; FileCheck compares
# output with CHECK: lines. Error tests hold one diagnostic each and anchor its
# line with [[@LINE]].
import os

import lit.formats

config.name = "pipec"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".pipe", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)

config.environment["PATH"] = os.pathsep.join(
    [config.pipec_bin_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%pipec", os.path.join(config.pipec_bin_dir, "pipec")))
config.substitutions.append(("%examples", os.path.join(config.source_root, "examples")))
config.substitutions.append(("%reference", os.path.join(config.test_source_root, "library", "Inputs", "reference")))
# One launcher for the multi-process (NCCL) tests: tests/tools/launch_ranks.sh.
config.substitutions.append(("%launch_ranks", "bash " + os.path.join(config.source_root, "tests", "tools", "launch_ranks.sh")))
config.substitutions.append(("%runtime_include", os.path.join(config.source_root, "runtime", "include")))
# The CPU runtime library, for tests that compile an emitted program themselves.
config.substitutions.append(("%pipert_library", config.pipert_library))

# CUDA: emitted CUDA programs are host C++ (syntax-checked everywhere); building
# them needs nvcc and a pipec configured with the CUDA runtime.
if getattr(config, "have_cuda_runtime", "OFF") == "ON":
    config.available_features.add("cuda-runtime")
# The CUDA executor over a host simulation of CUDA (tests/cuda_host): emitted
# CUDA programs run, with --check, without a GPU.
if getattr(config, "cuda_hostsim_library", ""):
    config.available_features.add("cuda-hostsim")
    config.substitutions.append(("%cuda_hostsim", "%s %s" % (config.cuda_hostsim_library, config.pipert_library)))
# The CUDA executor and the real GPU stages (kernels through a host kernel
# emulation, GEMMs through a reference cuBLAS; tests/cuda_emu): emitted CUDA
# programs run the GPU stage code, fp32 and bf16, with --check, without a GPU.
if getattr(config, "cuda_emulated_library", ""):
    config.available_features.add("cuda-emulated")
    config.substitutions.append(("%cuda_emulated", "%s %s" % (config.cuda_emulated_library, config.pipert_library)))

# PyTorch modules as stages (runtime/torch): programs built with --stages
# torchscript, modules exported by the torch environment's Python.
if getattr(config, "have_torch", "OFF") == "ON":
    config.available_features.add("torch")
    config.substitutions.append(("%torch_python", config.torch_python))
    config.substitutions.append(("%torch_export", os.path.join(config.source_root, "runtime", "torch", "pipec_torch_export.py")))
