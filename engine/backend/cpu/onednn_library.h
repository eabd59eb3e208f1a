#pragma once
// oneDNN's shared library, opened with dlopen at the first oneDNN call instead of being linked.
// A program linked against libdnnl.so.2 does not start where the library is missing: the
// dynamic loader stops it before main with its own message ("error while loading shared
// libraries"). Opened on first use, the programs start everywhere, whatever needs no CPU
// kernels runs, and the CPU backend's construction fails with a ResourceError that names the
// library, the loader's reason and the package that provides it.
//
// onednn_library.cpp defines the C functions of oneDNN's API that the engine calls (through
// dnnl.hpp), each forwarding to the library's own; a call of one not defined there fails to
// link, naming it, and is added there.
#include <string>

namespace mantissa::cpu {

// Why oneDNN's library cannot be loaded ("oneDNN's library libdnnl.so.2 cannot be loaded
// (<the loader's reason>); install the package libdnnl2 ..."), or empty once it is loaded.
// Loads it on the first call; never throws.
std::string oneDnnLibraryProblem();

} // namespace mantissa::cpu
