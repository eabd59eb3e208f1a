#pragma once
// Finds and loads the CUDA backend plugin once per process (thread-safe) and keeps it loaded
// for the process's lifetime: its code backs the tensors and backends it made. When it is
// not there or cannot load, whyNot says which file and why, in the loader's own words, e.g.
//   the CUDA backend (/usr/lib/mantissa/plugins/libmantissa-cuda.so) cannot load: libcublas.so.13:
//   cannot open shared object file: No such file or directory; ...
// Where it looks, first match wins:
//   1. $MANTISSA_CUDA_PLUGIN, a file path (tests, unusual installs);
//   2. <directory of the program>/<bindir-to-libdir>/mantissa/plugins/: installed programs and the
//      build tree, which mirrors the install layout (build/bin, build/lib/mantissa/plugins);
//   3. <install libdir>/mantissa/plugins/ of this build, and /usr/<libdir>/mantissa/plugins/ (the Debian
//      package), for host programs installed elsewhere.
#include "engine/backend/cuda_plugin_api.h"

#include <string>

namespace mantissa {

struct CudaPlugin {
    const CudaPluginApi* api = nullptr; // null when unavailable
    std::string path;                   // the file loaded, or tried
    std::string whyNot;                 // set when api is null
};

const CudaPlugin& cudaPlugin();

} // namespace mantissa
