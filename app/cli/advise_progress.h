#pragma once
// What `mantissa-cli advise` has measured, kept in a JSON file beside its output
// ("OUT.probes.json") after every probe, so that an advise interrupted (Ctrl-C, a crash, a
// machine gone) continues where it stopped when run again. The file names what the
// measurements are of (the baseline config, the trained state, the held-out batches); a file
// of other measurements is not reused.
#include "engine/advisor/precision_probe.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mantissa::cli {

struct AdviseProgress {
    // What the measurements are of; two progress files with the same key measured the same.
    std::string key;
    std::string checkpoint;                            // the trained state probed ("" the config's initial weights)
    std::map<std::string, LayerProbeResult> probes;    // by probeKey()
    std::map<std::string, std::vector<double>> scores; // by format key, in the layers' order

    static std::string probeKey(const std::string& layer, LayerPrecision format);
};

// The progress file of `output`: "OUT.probes.json".
std::string progressPath(const std::string& output);
// The trained state advise saves when it trains the baseline first: "OUT.state.ckpt".
std::string statePath(const std::string& output);

// The progress in `path`; nothing when there is no such file. IoError naming the file when
// it is not one advise wrote.
std::optional<AdviseProgress> loadProgress(const std::string& path);
// Writes `progress` to `path` whole (a temporary file renamed over it), so that an
// interruption leaves the previous file or the new one. IoError naming the file.
void saveProgress(const std::string& path, const AdviseProgress& progress);

} // namespace mantissa::cli
