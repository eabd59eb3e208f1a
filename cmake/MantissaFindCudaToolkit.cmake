# mantissa_find_cuda_toolkit(<find_package arguments>): find_package(CUDAToolkit) that also
# works with Debian 12's stock CMake 3.25.1 and CUDA 12.9 or newer.
#
# Why: that CMake's FindCUDAToolkit sets a DEPRECATION property on CUDA::nvToolsExt whenever
# the calling project requires CMake 3.25 or newer, without checking that the target exists.
# CUDA 12.9 and newer ship no libnvToolsExt, so the target never exists and configure stops
# with "set_property could not find TARGET CUDA::nvToolsExt". CMake 3.26 checks for the
# target first. The property is only a deprecation note, so while the module runs it is shown
# a 3.24 minimum, which skips the note; policies are untouched (they come from
# cmake_minimum_required, not from this variable). Used by the build (MantissaCuda.cmake) and
# by the installed MantissaConfig.cmake, whose consumers hit the same module.
# tests/setup/stock_find_cuda_toolkit.cmake checks it against the unpatched module.
macro(mantissa_find_cuda_toolkit)
  set(_mantissa_saved_minimum "${CMAKE_MINIMUM_REQUIRED_VERSION}")
  if(CMAKE_VERSION VERSION_LESS 3.26 AND CMAKE_MINIMUM_REQUIRED_VERSION VERSION_GREATER_EQUAL 3.25)
    set(CMAKE_MINIMUM_REQUIRED_VERSION 3.24)
  endif()
  find_package(CUDAToolkit ${ARGN})
  set(CMAKE_MINIMUM_REQUIRED_VERSION "${_mantissa_saved_minimum}")
  unset(_mantissa_saved_minimum)
endmacro()
