# Script mode (cmake -DSOURCE_DIR=... -DOUTPUT=... -P): writes the header that names the commit
# the build was made from, and rewrites it only when that changes, so that a build after a new
# commit recompiles the one file that reads it and nothing else. Outside a git checkout (a
# source tarball, git missing) the commit is empty and runs record the version alone.
set(commit "")
set(modified "")
find_program(GIT_EXECUTABLE git)
if(GIT_EXECUTABLE)
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
  if(failed)
    set(commit "")
  else()
    # Tracked files changed since the commit: the build is not the commit's code.
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes ERROR_QUIET)
    if(NOT changes STREQUAL "")
      set(modified ".modified")
    endif()
  endif()
endif()
set(content "// Written by cmake/WriteBuildCommit.cmake at build time. Do not edit.\n#define MANTISSA_BUILD_COMMIT \"${commit}${modified}\"\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUTPUT}" "${content}")
endif()
