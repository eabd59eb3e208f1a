# MANTISSA_WITH_CUDA: AUTO builds the CUDA backend when a CUDA compiler, cuBLAS and cuDNN are
# found (CI machines have them, so CI compiles every kernel); ON makes their absence an
# error; OFF leaves the backend out. Sets MANTISSA_HAVE_CUDA and, when on, MANTISSA_CUDNN_*.
# cuDNN is searched under CUDNN_ROOT (CMake or environment variable: a pip wheel's
# nvidia/cudnn folder, or Debian packages unpacked with dpkg -x), then the toolkit.
set(MANTISSA_HAVE_CUDA OFF)
if(MANTISSA_WITH_CUDA STREQUAL "OFF")
  message(STATUS "CUDA backend: off (MANTISSA_WITH_CUDA=OFF)")
  return()
endif()
if(NOT MANTISSA_WITH_CUDA MATCHES "^(AUTO|ON)$")
  message(FATAL_ERROR "MANTISSA_WITH_CUDA is '${MANTISSA_WITH_CUDA}'; expected AUTO, ON or OFF")
endif()

function(_mantissa_cuda_missing what)
  if(MANTISSA_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MANTISSA_WITH_CUDA=ON but ${what}. See docs/gpu.md.")
  endif()
  message(STATUS "CUDA backend: off (${what})")
endfunction()

if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  _mantissa_cuda_missing("no CUDA compiler (nvcc) was found")
  return()
endif()
include(MantissaFindCudaToolkit)
mantissa_find_cuda_toolkit(QUIET)
if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cublas)
  _mantissa_cuda_missing("the CUDA toolkit or cuBLAS was not found")
  return()
endif()
set(_cudnn_hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_ROOT})
find_path(MANTISSA_CUDNN_INCLUDE_DIR cudnn.h HINTS ${_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(MANTISSA_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
  HINTS ${_cudnn_hints} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)
if(NOT MANTISSA_CUDNN_INCLUDE_DIR OR NOT MANTISSA_CUDNN_LIBRARY)
  _mantissa_cuda_missing("cuDNN (cudnn.h and libcudnn) was not found; set CUDNN_ROOT")
  return()
endif()

# Turing (sm_75) through Hopper (sm_90). Ampere's sm_86/89 run the sm_80 binary; the sm_90
# PTX lets newer GPUs JIT. Volta (sm_70) only where the toolkit still supports it (CUDA
# 13 dropped it). Three binaries keep a 2-core build reasonable.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --list-gpu-arch OUTPUT_VARIABLE _archs ERROR_QUIET)
  set(_wanted 75-real 80-real 90)
  if(_archs MATCHES "compute_70")
    list(PREPEND _wanted 70-real)
  endif()
  set(CMAKE_CUDA_ARCHITECTURES ${_wanted} CACHE STRING "GPU architectures of the CUDA backend" FORCE)
endif()
enable_language(CUDA)
# CMake 3.25 predates its knowledge that nvcc 12+ speaks C++20; the kernels include the
# engine's C++20 headers, so tell it the flag (newer CMake sets the same).
if(CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0 AND NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(MANTISSA_HAVE_CUDA ON)
message(STATUS "CUDA backend: on (CUDA ${CUDAToolkit_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}, "
               "cuDNN ${MANTISSA_CUDNN_LIBRARY})")
