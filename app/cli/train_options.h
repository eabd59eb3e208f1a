#pragma once
// The options shared by `train` and `compare`: where the config comes from and the
// overrides a user types most often.
#include "engine/config/run_config.h"

#include <QCommandLineParser>

#include <optional>

namespace mantissa::cli {

// Adds --preset, --loss-scale, --data, --set PATH=VALUE and an option for every config field
// whose row names one (engine/config/config_field.h: --batch-size, --precision, ...).
void addTrainOptions(QCommandLineParser& parser);

// Builds the run config from the preset, the CONFIG.json or MODEL.onnx positional argument, or
// `base` (a stored run's config, train --from-run), and applies the overrides. Throws ConfigError
// with a message naming the option at fault, or naming the model file's problem.
RunConfig runConfigFromOptions(const QCommandLineParser& parser, const QStringList& positional,
                               const std::optional<RunConfig>& base = std::nullopt);

} // namespace mantissa::cli
