# Run by CTest (cmake -P): the engine must stay Qt-free, so that it builds on GPU servers
# without Qt and hosts can embed it without Qt. Fails, naming the place, when
#   1. a file under engine/ includes a Qt header (<QString>, <QtCore/...>, <qglobal.h>...),
#   2. the engine's link interface names a Qt target or library, or
#   3. the built engine archive needs a Qt symbol (a Qt class's mangled name, qt_*, q*Alloc).
# Inputs: -DENGINE_DIR (the sources) -DENGINE_ARCHIVE (the built library) -DLINK_FILE (the
# engine's link libraries, written by file(GENERATE)) -DNM (binutils' nm).
set(problems)

file(GLOB_RECURSE sources LIST_DIRECTORIES false "${ENGINE_DIR}/*.h" "${ENGINE_DIR}/*.cpp"
     "${ENGINE_DIR}/*.cu" "${ENGINE_DIR}/*.cuh")
foreach(source IN LISTS sources)
  file(STRINGS "${source}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"](Q[A-Za-z]|qt|qglobal)")
  foreach(line IN LISTS includes)
    file(RELATIVE_PATH where "${ENGINE_DIR}/.." "${source}")
    list(APPEND problems "${where} includes a Qt header: ${line}")
  endforeach()
endforeach()
list(LENGTH sources count)
if(count LESS 50)
  message(FATAL_ERROR "found only ${count} engine sources under ${ENGINE_DIR}; is ENGINE_DIR right?")
endif()

file(READ "${LINK_FILE}" link_libraries)
if(link_libraries MATCHES "(Qt[0-9]*::[A-Za-z]+|libQt[0-9])")
  list(APPEND problems "the engine links Qt: ${CMAKE_MATCH_1} in its link libraries (${link_libraries})")
endif()

execute_process(COMMAND "${NM}" --undefined-only --format=just-symbols "${ENGINE_ARCHIVE}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE symbols ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} could not read ${ENGINE_ARCHIVE}: ${err}")
endif()
# Itanium mangling writes a class name as its length then the name ("7QString"); Qt's free
# functions are qt_* and q-prefixed helpers such as qBadAlloc.
string(REGEX MATCHALL "[^\n]*([0-9]Q[A-Z][A-Za-z]+|(^|\n)_?qt_[A-Za-z_]+|(^|\n)_?_?Z[^\n]*q[A-Z][a-z]+Alloc)[^\n]*" qt_symbols "${symbols}")
if(qt_symbols)
  list(SUBLIST qt_symbols 0 5 first)
  list(LENGTH qt_symbols n)
  list(APPEND problems "${ENGINE_ARCHIVE} needs ${n} Qt symbols, e.g. ${first}")
endif()

if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "The engine must stay Qt-free (engine/CMakeLists.txt):\n  ${text}")
endif()
message(STATUS "engine Qt-free: ${count} sources without a Qt include, no Qt in the link interface or the archive's symbols")
