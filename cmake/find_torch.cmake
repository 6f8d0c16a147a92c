# Finds libtorch: the one version this project pins (packaging/install-torch.sh
# unpacks PyPI's torch wheel into a cache folder), through the wheel's own CMake
# config. Looked for, first found wins:
#   -DTorch_DIR=... or CMAKE_PREFIX_PATH    what the caller says
#   $BATCHPILOT_TORCH_HOME/site             install-torch.sh's folder, moved
#   ~/.cache/batchpilot/torch-2.11.0/site   install-torch.sh's folder
#   python3's torch                         torch.utils.cmake_prefix_path (a GPU box
#                                           with PyTorch installed, docs/gpu.md)
#
# PyPI's torch is a CUDA build: its config enables the CUDA language and needs
# the CUDA toolkit (nvcc) of the version it was built with. Our own kernels
# (engine/torch/kernels/) are compiled for the GPU of this machine when
# nvidia-smi sees one, else for Ampere, Hopper and Blackwell (sm_80, sm_90,
# sm_100) plus PTX of sm_100 that newer GPUs compile at load, so that a
# package or bundle built on a machine without a GPU runs on an A100, an
# H100/H200 or a B200 without "no kernel image".
#
# Sets BATCHPILOT_TORCH_CUDA (the libtorch has CUDA and nvcc works) and
# BATCHPILOT_TORCH_SITE (the folder holding the `torch` Python package, for the
# TorchScript fixtures; empty when torch came from elsewhere).
set(BATCHPILOT_TORCH_VERSION 2.11.0)

# torch's config sets the nvcc -gencode flags from TORCH_CUDA_ARCH_LIST (and
# ignores CMAKE_CUDA_ARCHITECTURES). We set it from the GPUs nvidia-smi lists
# (their compute capabilities), else to 8.0;9.0;10.0+PTX: what a machine
# without a GPU (CI, a package build) builds must run on the GPUs it is
# shipped to. The three targets cost the kernels' compile 2.6 s -> 5.4 s
# here (docs/gpu.md, "Which GPU the kernels are built for").
set(BATCHPILOT_GPUS "" CACHE INTERNAL "")
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  find_program(BATCHPILOT_NVIDIA_SMI nvidia-smi)
  set(_bp_caps "")
  if(BATCHPILOT_NVIDIA_SMI)
    execute_process(COMMAND ${BATCHPILOT_NVIDIA_SMI} --query-gpu=name,compute_cap --format=csv,noheader
                    RESULT_VARIABLE _bp_smi_rc OUTPUT_VARIABLE _bp_smi OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_bp_smi_rc EQUAL 0 AND _bp_smi)
      string(REPLACE "\n" ";" _bp_lines "${_bp_smi}")
      foreach(line IN LISTS _bp_lines)
        if(line MATCHES "^(.*), *([0-9]+\\.[0-9]+)$")
          list(APPEND _bp_caps "${CMAKE_MATCH_2}")
          set(BATCHPILOT_GPUS "${BATCHPILOT_GPUS}${CMAKE_MATCH_1} (sm_${CMAKE_MATCH_2}) " CACHE INTERNAL "")
        endif()
      endforeach()
      list(REMOVE_DUPLICATES _bp_caps)
    endif()
  endif()
  if(_bp_caps)
    set(TORCH_CUDA_ARCH_LIST "${_bp_caps}")
    message(STATUS "CUDA kernels for this machine's GPU: ${BATCHPILOT_GPUS}")
  else()
    set(TORCH_CUDA_ARCH_LIST "8.0;9.0;10.0+PTX")
    message(STATUS "CUDA kernels for sm_80, sm_90, sm_100 and PTX (no GPU seen by nvidia-smi: they compile, "
                   "the engine runs on the CPU)")
  endif()
endif()

# The folder of the `torch` package (lib/, include/, share/cmake/) goes first
# on CMAKE_PREFIX_PATH, so that its Torch and Caffe2 configs and its libraries
# win over any other libtorch installed on the system (Debian's libtorch-dev
# 1.13 in /usr would otherwise be found by the configs' own searches).
set(_bp_torch_prefixes)
if(DEFINED ENV{BATCHPILOT_TORCH_HOME})
  list(APPEND _bp_torch_prefixes "$ENV{BATCHPILOT_TORCH_HOME}/site/torch")
endif()
if(DEFINED ENV{XDG_CACHE_HOME})
  list(APPEND _bp_torch_prefixes "$ENV{XDG_CACHE_HOME}/batchpilot/torch-${BATCHPILOT_TORCH_VERSION}/site/torch")
endif()
list(APPEND _bp_torch_prefixes "$ENV{HOME}/.cache/batchpilot/torch-${BATCHPILOT_TORCH_VERSION}/site/torch")
find_program(_bp_py NAMES python3)
if(_bp_py)
  execute_process(COMMAND ${_bp_py} -c "import os, torch; print(os.path.dirname(torch.__file__))"
                  RESULT_VARIABLE _bp_py_rc OUTPUT_VARIABLE _bp_py_torch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_bp_py_rc EQUAL 0)
    list(APPEND _bp_torch_prefixes "${_bp_py_torch}")
  endif()
endif()
if(NOT Torch_DIR)
  foreach(prefix IN LISTS _bp_torch_prefixes)
    if(EXISTS "${prefix}/share/cmake/Torch/TorchConfig.cmake")
      list(PREPEND CMAKE_PREFIX_PATH "${prefix}")
      break()
    endif()
  endforeach()
endif()

# Our .cu files are C++17 (CMake 3.25 knows no CUDA20 dialect for nvcc); torch's
# config would otherwise copy CMAKE_CXX_STANDARD (20).
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
# One CUDA runtime in the process, libtorch's shared one: a static copy linked
# into our kernels would keep its own state beside it.
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
find_package(Torch REQUIRED)
if(Torch_VERSION VERSION_LESS 2.4)
  message(FATAL_ERROR "libtorch ${Torch_VERSION} at ${Torch_DIR} is too old: BatchPilot needs 2.4 or newer "
                      "(${BATCHPILOT_TORCH_VERSION} is the tested one; run packaging/install-torch.sh)")
endif()
if(NOT Torch_VERSION VERSION_EQUAL BATCHPILOT_TORCH_VERSION)
  message(WARNING "libtorch ${Torch_VERSION} (${Torch_DIR}); the tested version is ${BATCHPILOT_TORCH_VERSION}")
endif()

# PyPI's libtorch.so and libtorch_cpu.so export their own copy of
# std::filesystem (built with the wheel's toolchain). A program that needs
# libtorch before libstdc++ resolves its std::filesystem calls to that copy,
# which crashed here (std::filesystem::remove_all). libstdc++ first among
# every program's libraries keeps our calls on the system's implementation.
add_link_options("LINKER:--push-state,--no-as-needed" "-lstdc++" "LINKER:--pop-state")
# An installed program finds the libtorch its package carries in the private
# folder beside it (cmake/packaging.cmake), and nothing else: no path into
# the building machine's home or toolkit (lintian: custom-library-search-path).
# The build tree keeps the link paths (the unpacked wheel in the cache).
set(CMAKE_INSTALL_RPATH "$ORIGIN/../lib/batchpilot")
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH OFF)

set(BATCHPILOT_TORCH_CUDA OFF)
if(TARGET torch_cuda AND CMAKE_CUDA_COMPILER)
  set(BATCHPILOT_TORCH_CUDA ON)
endif()
message(STATUS "libtorch ${Torch_VERSION} at ${Torch_DIR}; CUDA kernels: ${BATCHPILOT_TORCH_CUDA}")

# The folder holding the `torch` package (share/cmake/Torch -> ../../../..)
get_filename_component(_bp_site "${Torch_DIR}/../../../.." ABSOLUTE)
if(EXISTS "${_bp_site}/torch/__init__.py")
  set(BATCHPILOT_TORCH_SITE "${_bp_site}")
else()
  set(BATCHPILOT_TORCH_SITE "")
endif()
