# One interface target that every Mantissa target links, so the warning policy lives in one place.
add_library(mantissa_warnings INTERFACE)
target_compile_options(mantissa_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-unused-parameter>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
