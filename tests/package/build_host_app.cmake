# Run by CTest (package_host_app): installs the SDK (component dev) into a temporary prefix,
# checks what it installed, then configures, builds and runs examples/host-app and its Qt
# Test against that prefix, never the build tree. Any failure is fatal.
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --component dev)

# Every header the SDK installs finds the project headers it includes in the install, and
# the private ones stay out: a public header that starts including a private one fails here.
set(include_root ${prefix}/include/mantissa)
file(GLOB_RECURSE headers RELATIVE ${include_root} ${include_root}/*.h)
list(LENGTH headers count)
if(count LESS 20)
  message(FATAL_ERROR "only ${count} headers installed under ${include_root}")
endif()
foreach(header IN LISTS headers)
  file(STRINGS ${include_root}/${header} includes REGEX "^#include \"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
    if(NOT EXISTS ${include_root}/${included})
      message(FATAL_ERROR "the installed ${header} includes ${included}, which is not installed: "
                          "make it public (its library's FILE_SET HEADERS) or stop including it")
    endif()
  endforeach()
endforeach()
foreach(private ui/workbench.h ui/run_controller.h storage/connection.h engine/backend/cpu/cpu_backend.h
                report/html_renderer.h)
  if(EXISTS ${include_root}/${private})
    message(FATAL_ERROR "the private header ${private} was installed")
  endif()
endforeach()
message(STATUS "${count} public headers, all self-contained in the install")

# An unknown component fails find_package, naming the components there are.
file(WRITE ${WORK_DIR}/nosuch/CMakeLists.txt
  "cmake_minimum_required(VERSION 3.25)\nproject(NoSuch LANGUAGES CXX)\n"
  "find_package(Mantissa 0.2 REQUIRED COMPONENTS engine nosuch)\n")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK_DIR}/nosuch -B ${WORK_DIR}/nosuch/build -G ${GENERATOR}
                        -DCMAKE_PREFIX_PATH=${prefix}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "[ \n]+" " " err_line "${err}") # CMake wraps the message
if(rc EQUAL 0 OR NOT err_line MATCHES "no component 'nosuch'; its components are: engine, storage, report, workbench")
  message(FATAL_ERROR "find_package(Mantissa COMPONENTS nosuch) should fail listing the components:\n${out}\n${err}")
endif()

set(host ${WORK_DIR}/host-app)
run(${CMAKE_COMMAND} -S ${HOST_APP_DIR} -B ${host} -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${host})
run(${CMAKE_COMMAND} -E env QT_QPA_PLATFORM=offscreen ${host}/lab_window_test)
