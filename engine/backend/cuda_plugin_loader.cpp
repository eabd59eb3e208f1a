#include "engine/backend/cuda_plugin_loader.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <vector>

// Set by engine/CMakeLists.txt from the install layout: the plugin's file name, the plugin
// folder relative to the programs' folder, and the absolute folders tried after it.
#ifndef MANTISSA_CUDA_PLUGIN_FILE
#error "MANTISSA_CUDA_PLUGIN_FILE, MANTISSA_CUDA_PLUGIN_RELDIR and MANTISSA_CUDA_PLUGIN_DIRS come from the build"
#endif

namespace mantissa {

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> pluginCandidates()
{
    std::vector<fs::path> dirs;
    std::error_code ec;
    const fs::path program = fs::read_symlink("/proc/self/exe", ec);
    if (!ec)
        dirs.push_back((program.parent_path() / MANTISSA_CUDA_PLUGIN_RELDIR).lexically_normal());
    std::string_view fixed = MANTISSA_CUDA_PLUGIN_DIRS;
    while (!fixed.empty()) {
        const std::size_t colon = fixed.find(':');
        dirs.emplace_back(fixed.substr(0, colon));
        fixed = colon == std::string_view::npos ? std::string_view{} : fixed.substr(colon + 1);
    }
    std::vector<fs::path> files;
    for (const fs::path& dir : dirs) {
        const fs::path file = dir / MANTISSA_CUDA_PLUGIN_FILE;
        if (std::find(files.begin(), files.end(), file) == files.end())
            files.push_back(file);
    }
    return files;
}

// The first candidate that exists, or empty with whyNot saying where none was found.
fs::path findPlugin(std::string& whyNot)
{
    if (const char* named = std::getenv("MANTISSA_CUDA_PLUGIN"); named && *named) {
        std::error_code ec;
        if (fs::is_regular_file(named, ec))
            return named;
        whyNot = std::string("MANTISSA_CUDA_PLUGIN names ") + named + ", which is not a file";
        return {};
    }
    std::string looked;
    for (const fs::path& file : pluginCandidates()) {
        std::error_code ec;
        if (fs::is_regular_file(file, ec))
            return file;
        looked += (looked.empty() ? "" : ", ") + file.parent_path().string();
    }
    whyNot = "the CUDA backend plugin " MANTISSA_CUDA_PLUGIN_FILE " is not installed (looked in " + looked + ")";
    return {};
}

CudaPlugin loadPlugin()
{
    CudaPlugin plugin;
    const fs::path file = findPlugin(plugin.whyNot);
    if (file.empty())
        return plugin;
    plugin.path = file.string();
    // RTLD_NODELETE: the plugin's code backs every tensor and backend it makes, so it stays
    // mapped until the process ends. RTLD_LOCAL: its libraries do not leak into the program.
    void* handle = dlopen(plugin.path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!handle) {
        const char* error = dlerror();
        plugin.whyNot = "the CUDA backend (" + plugin.path + ") cannot load: " + (error ? error : "unknown error") +
                        "; install " MANTISSA_CUDA_LIBRARIES
                        " or add their folder to the loader's path (ld.so.conf.d or "
                        "LD_LIBRARY_PATH)";
        return plugin;
    }
    using Entry = const CudaPluginApi* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, MANTISSA_CUDA_PLUGIN_ENTRY));
    const CudaPluginApi* api = entry ? entry() : nullptr;
    if (!api) {
        plugin.whyNot = plugin.path + " is not a Mantissa CUDA backend plugin (no " MANTISSA_CUDA_PLUGIN_ENTRY ")";
        return plugin;
    }
    if (api->abi != kCudaPluginAbi || !api->version || std::strcmp(api->version, MANTISSA_VERSION) != 0) {
        plugin.whyNot = "the CUDA backend " + plugin.path + " is from Mantissa " + (api->version ? api->version : "?") +
                        " (plugin interface " + std::to_string(api->abi) + "), but this program is Mantissa " +
                        MANTISSA_VERSION + " (interface " + std::to_string(kCudaPluginAbi) +
                        "): install the plugin that came with it";
        return plugin;
    }
    plugin.api = api;
    return plugin;
}

} // namespace

const CudaPlugin& cudaPlugin()
{
    static const CudaPlugin plugin = loadPlugin();
    return plugin;
}

} // namespace mantissa
