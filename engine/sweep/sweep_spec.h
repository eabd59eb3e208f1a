#pragma once
// A sweep: one base run config times axes (any config key, by its path, with a list of
// values) times seeds. Expanding it gives one RunConfig per combination, each parsed by
// parseRunConfig exactly as `mantissa-cli train` parses a file, so a sweep cannot run a
// config that `train` would refuse. docs/sweeps.md documents the spec file.
//
// The spec in a file (every field but "base" optional):
//   {"name": "fp16 vs mixed",
//    "base": "deep-mlp" | {"preset": "deep-mlp"} | {"file": "model.json"} | {"config": {...}},
//    "set": {"training.epochs": 1},                       // applied to every run
//    "precisions": ["fp16", "mixed-fp16"],                // shorthand axes, in this order:
//    "loss_scales": ["dynamic", 128],                     //   precision.loss_scale
//    "learning_rates": [0.1, 0.05],                       //   optimizer.lr
//    "batch_sizes": [64, 128],                            //   training.batch_size
//    "axes": [{"key": "model.layers[1].units", "values": [64, 128]}],
//    "arms": [{"name": "fp16 static", "set": {"precision.mode": "fp16", "precision.loss_scale.type": "static"}}],
//    "seeds": 8 | [0, 1, 2]}                              // 8 means seeds 0 to 7
// Arms are named sets of settings that change together (several keys at once, where an axis
// changes one); they are the outermost axis, so an arm's configurations stay together.
// Seeds are always the innermost axis: runs with the same values on every other axis form one
// configuration, and statistics are taken over its seeds.
#include "engine/config/run_config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mantissa {

struct SweepAxis {
    std::string key;                 // a path in the run config JSON: "precision.mode", "model.layers[1].units"
    std::vector<std::string> values; // each one JSON value as text: "\"fp16\"", "0.1", "{\"type\":\"dynamic\"}"
};

// A named set of settings applied together on top of the base: {"name", "set": {PATH: value}}.
struct SweepArm {
    std::string name;
    std::vector<std::pair<std::string, std::string>> settings; // path, one JSON value as text
};

struct SweepSpec {
    std::string name;
    std::string baseConfigJson; // the full base config ("set" applied), as runConfigToJson writes it
    std::vector<SweepArm> arms; // empty: no arms (one arm, the base itself)
    std::vector<SweepAxis> axes;
    std::vector<std::uint64_t> seeds; // never empty

    std::size_t configurationCount() const;
    std::size_t runCount() const { return configurationCount() * seeds.size(); }
};

// One combination of the axes' values, all seeds together.
struct SweepConfiguration {
    int index = 0;
    std::string label;                    // "mixed-fp16", or "mode=fp16, lr=0.1" with several axes
    std::vector<std::string> assignments; // "precision.mode=fp16", one per axis (an arm: "arm=NAME" first)
    int arm = -1;                         // SweepSpec::arms index; -1 without arms
};

struct SweepRun {
    int index = 0;         // position in the sweep: configuration-major, seed-minor
    int configuration = 0; // SweepConfiguration::index
    std::uint64_t seed = 0;
    std::string label; // "precision.mode=fp16, seed=3"
    RunConfig config;
};

struct SweepPlan {
    std::vector<SweepConfiguration> configurations;
    std::vector<SweepRun> runs;
};

// Parses a spec file's text. `origin` (the file) prefixes every error; a "file" base is
// resolved against `baseDirectory`. Throws ConfigError naming the field at fault: an unknown
// field, zero seeds, an axis without values, a base that does not parse.
SweepSpec parseSweepSpec(const std::string& json, const std::string& origin, const std::string& baseDirectory);
SweepSpec loadSweepSpecFile(const std::string& path);

// "Compare precisions" over seeds: `base` once per mode in `modes`, each with seeds 0 to
// seeds - 1, as `mantissa-cli sweep --precisions A,B --seeds N` builds it. The config is checked
// as it is (validateRunConfig), not written out and parsed back. Throws ConfigError.
SweepSpec precisionComparisonSpec(const RunConfig& base, const std::vector<PrecisionMode>& modes, int seeds);

// The spec in its self-contained form (the base inlined as {"config": ...}, shorthands
// turned into axes, seeds listed): what the run store keeps and what a Slurm task reads.
// parseSweepSpec(sweepSpecToJson(s)) gives s back.
std::string sweepSpecToJson(const SweepSpec& spec, int indent = -1);

// Every run of the sweep. Throws ConfigError when an axis names an unknown key or gives a
// value its key refuses; the message names the key, the value and the run it would have
// produced ("sweep.json run 3 of 16 (optimizer.lrr=0.1, seed=0): optimizer.lrr is not a known
// field").
SweepPlan expandSweep(const SweepSpec& spec, const std::string& origin);

// The value of one axis as a person reads it: strings unquoted, a loss scale as "dynamic" or
// "static 128", anything else as compact JSON.
std::string sweepValueText(const std::string& jsonValue);

} // namespace mantissa
