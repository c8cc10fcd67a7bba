# Finds what condbench builds against. LibTorch comes from the PyTorch wheel in .venv (made by
# scripts/setup) unless the user points CMAKE_PREFIX_PATH or Torch_DIR at their own.

# LibTorch's CMake config appends its own CUDA flags (-gencode for every architecture it was
# built for, some of which a newer nvcc rejects) to CMAKE_CUDA_FLAGS; condbench's kernels choose
# their own architectures, so keep the flags as they were.
set(CONDBENCH_SAVED_CUDA_FLAGS "${CMAKE_CUDA_FLAGS}")
# A build folder configured when .venv was a link to the cached environment (older setups) holds
# LibTorch's files under that path: forgotten when they are gone there, and found again below.
get_cmake_property(_cached CACHE_VARIABLES)
foreach(_var IN LISTS _cached)
  get_property(_type CACHE ${_var} PROPERTY TYPE)
  if(_type MATCHES "^(FILEPATH|PATH)$" AND "${${_var}}" MATCHES "/torch/" AND NOT EXISTS "${${_var}}")
    unset(${_var} CACHE)
  endif()
endforeach()
find_package(Torch QUIET)
if(NOT Torch_FOUND)
  set(_venv_python ${CMAKE_SOURCE_DIR}/.venv/bin/python)
  if(NOT EXISTS ${_venv_python})
    message(FATAL_ERROR "LibTorch not found: run scripts/setup, or pass -DCMAKE_PREFIX_PATH=<libtorch>")
  endif()
  execute_process(COMMAND ${_venv_python} -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
                  OUTPUT_VARIABLE _torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "LibTorch not found: ${_venv_python} cannot import torch; run scripts/setup")
  endif()
  list(APPEND CMAKE_PREFIX_PATH ${_torch_prefix})
  find_package(Torch REQUIRED)
endif()
set(CMAKE_CUDA_FLAGS "${CONDBENCH_SAVED_CUDA_FLAGS}")

# The PyTorch wheel brings its own CUDA libraries (nvidia/*/lib beside torch/). Link and run
# against those, not the toolkit's copies: LibTorch was built with them, and a process must hold
# one CUDA runtime (libcudart.so.13 from the wheel) that LibTorch and condbench's kernels share.
if(TORCH_INSTALL_PREFIX)
  file(GLOB CONDBENCH_WHEEL_CUDA_LIBS LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
  if(CONDBENCH_WHEEL_CUDA_LIBS)
    list(JOIN CONDBENCH_WHEEL_CUDA_LIBS ":" _joined)
    add_link_options("LINKER:-rpath-link,${_joined}")
    set(CMAKE_BUILD_RPATH ${CONDBENCH_WHEEL_CUDA_LIBS})
  endif()
endif()

find_package(benchmark REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
if(CONDBENCH_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

# --- CUDA (optional) -------------------------------------------------------------------------------
set(CONDBENCH_CUDA OFF)
if(CONDBENCH_WITH_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CONDBENCH_CUDA ON)
  endif()
endif()
if(CONDBENCH_CUDA)
  # sm_80 (A100) and sm_90 (H100/H200) machine code, plus compute_90 PTX for newer GPUs to JIT.
  if(NOT CONDBENCH_CUDA_ARCHITECTURES)
    set(CONDBENCH_CUDA_ARCHITECTURES 80-real 90)
  endif()
  set(CMAKE_CUDA_ARCHITECTURES ${CONDBENCH_CUDA_ARCHITECTURES})
  # One CUDA runtime in the process, for every target (libraries, executables, tests): the shared
  # libcudart.so.13 that LibTorch also loads (the wheel's copy, first on the rpath). A static
  # cudart would be a second runtime with its own state beside LibTorch's, and CUDA objects
  # (graphs, handles, streams) handed between the two are a source of subtle failures.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
endif()
if(NOT CONDBENCH_CUDA)
  message(STATUS "condbench: no CUDA compiler found; building the CPU parts only")
endif()

# NVTX3 is header-only and ships with the CUDA toolkit; without it the ranges compile to nothing.
find_path(CONDBENCH_NVTX_INCLUDE_DIR nvtx3/nvToolsExt.h
          HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{CUDA_HOME}/include /usr/local/cuda/include)
if(CONDBENCH_NVTX_INCLUDE_DIR)
  set(CONDBENCH_HAVE_NVTX ON)
else()
  set(CONDBENCH_HAVE_NVTX OFF)
  message(STATUS "condbench: NVTX3 headers not found; NVTX ranges are compiled out")
endif()
