# LibTorch, for the torch stages (runtime/torch): detected, never required.
# It comes from the torch wheel that `./setup.sh --torch` installs into
# $PIPEC_TORCH_VENV, else ~/.cache/pipec/torch-venv (runtime/torch/install_torch.sh);
# -DPIPEC_TORCH_PYTHON=... names another Python with torch, -DPIPEC_TORCH=OFF
# skips it. Sets PIPEC_HAVE_TORCH, PIPEC_TORCH_PYTHON_FOUND (that Python imports
# torch), PIPEC_TORCH_LIBRARIES, PIPEC_TORCH_LIBRARY_DIR
# and the interface target pipec_libtorch.
#
# The wheel's own CMake package (torch.utils.cmake_prefix_path) locates it, but
# is not loaded with find_package(Torch): the PyPI wheel is built with CUDA, and
# its TorchConfig.cmake stops with a fatal error where no CUDA toolkit is
# installed, and otherwise links the system toolkit's libraries. The CPU stages
# need two of its libraries, libtorch_cpu and libc10, and its headers.
option(PIPEC_TORCH "Build the LibTorch stage adapter when torch is found" ON)
set(PIPEC_HAVE_TORCH OFF)
set(PIPEC_TORCH_PYTHON_FOUND OFF)
set(PIPEC_TORCH_MISSING "LibTorch not found: torch stages and their tests are skipped; run ./setup.sh --torch")
if(PIPEC_TORCH AND NOT PIPEC_COMPILER_ONLY)
  if(DEFINED ENV{PIPEC_TORCH_VENV} AND NOT "$ENV{PIPEC_TORCH_VENV}" STREQUAL "")
    set(pipecTorchVenv "$ENV{PIPEC_TORCH_VENV}")
  else()
    set(pipecTorchVenv "$ENV{HOME}/.cache/pipec/torch-venv")
  endif()
  set(PIPEC_TORCH_PYTHON "${pipecTorchVenv}/bin/python" CACHE FILEPATH "Python of the environment holding torch")
  if(EXISTS "${PIPEC_TORCH_PYTHON}")
    execute_process(
      COMMAND "${PIPEC_TORCH_PYTHON}" -c
        "import torch; print(torch.__version__); print(torch.utils.cmake_prefix_path); print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
      OUTPUT_VARIABLE pipecTorchProbe RESULT_VARIABLE pipecTorchStatus ERROR_QUIET
      OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 300)
    if(pipecTorchStatus EQUAL 0)
      set(PIPEC_TORCH_PYTHON_FOUND ON) # the Python tests (torch-recordings, python/) need no more
      string(REPLACE "\n" ";" pipecTorchProbe "${pipecTorchProbe}")
      list(GET pipecTorchProbe -3 PIPEC_TORCH_VERSION)
      list(GET pipecTorchProbe -2 pipecTorchPrefix)
      list(GET pipecTorchProbe -1 pipecTorchAbi)
      get_filename_component(pipecTorchRoot "${pipecTorchPrefix}/../.." ABSOLUTE) # .../site-packages/torch
      set(PIPEC_TORCH_LIBRARY_DIR "${pipecTorchRoot}/lib")
      set(PIPEC_TORCH_LIBRARIES "${PIPEC_TORCH_LIBRARY_DIR}/libtorch_cpu.so;${PIPEC_TORCH_LIBRARY_DIR}/libc10.so")
      # pipert's std::string must be torch's: one C++ ABI for both.
      if(EXISTS "${pipecTorchRoot}/include/torch/script.h" AND EXISTS "${PIPEC_TORCH_LIBRARY_DIR}/libtorch_cpu.so"
         AND pipecTorchAbi STREQUAL "1")
        set(PIPEC_HAVE_TORCH ON)
      else()
        set(PIPEC_TORCH_MISSING "LibTorch at ${pipecTorchRoot} has no headers, no libtorch_cpu.so or the old C++ ABI: torch stages and their tests are skipped")
      endif()
    endif()
  endif()
elseif(NOT PIPEC_TORCH)
  set(PIPEC_TORCH_MISSING "LibTorch off (-DPIPEC_TORCH=OFF): torch stages and their tests are skipped")
endif()
if(PIPEC_HAVE_TORCH)
  add_library(pipec_libtorch INTERFACE)
  target_include_directories(pipec_libtorch SYSTEM INTERFACE
    "${pipecTorchRoot}/include" "${pipecTorchRoot}/include/torch/csrc/api/include")
  target_link_libraries(pipec_libtorch INTERFACE ${PIPEC_TORCH_LIBRARIES})
  message(STATUS "pipec: LibTorch ${PIPEC_TORCH_VERSION} (${pipecTorchRoot})")
elseif(NOT PIPEC_COMPILER_ONLY)
  message(STATUS "pipec: ${PIPEC_TORCH_MISSING}")
endif()
# CI installs torch (./setup.sh --torch) and sets PIPEC_REQUIRE_TORCH=1 (.ci/run):
# there a torch that is not found is a configure error, not tests that skip.
if("$ENV{PIPEC_REQUIRE_TORCH}" STREQUAL "1" AND NOT PIPEC_COMPILER_ONLY
   AND NOT (PIPEC_HAVE_TORCH AND PIPEC_TORCH_PYTHON_FOUND))
  message(FATAL_ERROR "pipec: PIPEC_REQUIRE_TORCH=1, but ${PIPEC_TORCH_MISSING}")
endif()
