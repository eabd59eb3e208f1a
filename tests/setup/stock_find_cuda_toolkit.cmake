# Run by CTest (cmake -P): the project's CUDA detection must configure with Debian 12's stock
# FindCUDAToolkit (CMake 3.25.1), which fails on CUDA 12.9+ for any project requiring 3.25
# (see cmake/MantissaFindCudaToolkit.cmake). A machine's own copy of the module may carry a
# distribution patch, so the stock text is rebuilt from it by undoing that patch.
# Inputs: -DSOURCE_DIR -DWORK_DIR -DGENERATOR. Prints "SKIPPED: reason" where the check
# cannot apply (CTest reports it as skipped through SKIP_REGULAR_EXPRESSION).
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/modules")

set(nvcc /usr/local/cuda/bin/nvcc)
if(NOT EXISTS "${nvcc}")
  message("SKIPPED: no CUDA toolkit at /usr/local/cuda, so the stock module's CUDA 12.9+ failure cannot arise")
  return()
endif()
file(GLOB nvtools_libs /usr/local/cuda/lib64/libnvToolsExt* /usr/local/cuda/lib/libnvToolsExt*)
if(nvtools_libs)
  message("SKIPPED: this CUDA toolkit still ships libnvToolsExt (${nvtools_libs}), so the failure cannot arise")
  return()
endif()

file(READ "${CMAKE_ROOT}/Modules/FindCUDAToolkit.cmake" module)
set(unguarded "if(CMAKE_MINIMUM_REQUIRED_VERSION VERSION_GREATER_EQUAL 3.25)")
string(REPLACE "if(TARGET CUDA::nvToolsExt AND CMAKE_MINIMUM_REQUIRED_VERSION VERSION_GREATER_EQUAL 3.25)"
               "${unguarded}" module "${module}")
string(FIND "${module}" "${unguarded}" at)
if(at EQUAL -1)
  message("SKIPPED: CMake ${CMAKE_VERSION}'s FindCUDAToolkit is not the 3.25 module with the unguarded nvToolsExt note")
  return()
endif()
# It includes its neighbours by its own folder; they stay in CMake's.
string(REPLACE "\${CMAKE_CURRENT_LIST_DIR}" "${CMAKE_ROOT}/Modules" module "${module}")
file(WRITE "${WORK_DIR}/modules/FindCUDAToolkit.cmake" "${module}")

function(configure name body result_var output_var)
  file(WRITE "${WORK_DIR}/${name}/CMakeLists.txt"
    "cmake_minimum_required(VERSION 3.25)\nproject(${name} LANGUAGES C CXX)\n"
    "list(PREPEND CMAKE_MODULE_PATH \"${WORK_DIR}/modules\" \"${SOURCE_DIR}/cmake\")\n${body}\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -S "${WORK_DIR}/${name}" -B "${WORK_DIR}/${name}/build" -G "${GENERATOR}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${result_var} ${rc} PARENT_SCOPE)
  set(${output_var} "${out}${err}" PARENT_SCOPE)
endfunction()

# The control: a plain find_package must reproduce the failure, or this check proves nothing.
configure(control "find_package(CUDAToolkit QUIET)" rc out)
if(rc EQUAL 0 OR NOT out MATCHES "could not find TARGET CUDA::nvToolsExt")
  message(FATAL_ERROR "the rebuilt stock module did not reproduce the nvToolsExt failure (exit ${rc}):\n${out}")
endif()
message(STATUS "control: the stock module fails as reported (\"set_property could not find TARGET CUDA::nvToolsExt\")")

# The project's detection, as the top-level CMakeLists includes it.
configure(project "set(MANTISSA_WITH_CUDA AUTO)\ninclude(MantissaCuda)" rc out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "MantissaCuda.cmake failed to configure with the stock module (exit ${rc}):\n${out}")
endif()
# The installed package config, as a consumer's find_package(Mantissa) runs it.
configure(consumer "include(MantissaFindCudaToolkit)\nmantissa_find_cuda_toolkit(REQUIRED)" rc out2)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mantissa_find_cuda_toolkit failed with the stock module (exit ${rc}):\n${out2}")
endif()
string(REGEX MATCH "CUDA backend: [^\n]*" verdict "${out}")
message(STATUS "with the stock module: ${verdict}")
