#include "cli/train_options.h"

#include "engine/config/presets.h"
#include "engine/util/check.h"

#include <QFileInfo>

namespace mantissa::cli {

namespace {

std::int64_t integerOption(const QCommandLineParser& parser, const QString& name, std::int64_t minimum)
{
    bool ok = false;
    const qlonglong value = parser.value(name).toLongLong(&ok);
    if (!ok || value < minimum)
        throw ConfigError("--" + name.toStdString() + " expects an integer >= " + std::to_string(minimum) +
                          ", got \"" + parser.value(name).toStdString() + "\"");
    return value;
}

} // namespace

void addTrainOptions(QCommandLineParser& parser)
{
    parser.addOptions({
        {"preset", "Train a built-in preset: softmax, mlp, cnn, wide-mlp, deep-mlp, deep-sigmoid, vgg-small, resnet-small.", "name"},
        {"precision", "fp32, fp16, mixed-fp16, mixed-bf16 or bf16.", "mode"},
        {"loss-scale", "none, dynamic, or a static value such as 128.", "scale"},
        {"epochs", "Number of epochs.", "n"},
        {"max-steps", "Stop after this many optimizer steps.", "n"},
        {"batch-size", "Mini-batch size.", "n"},
        {"seed", "Random seed (weights, data order, dropout).", "n"},
        {"device", "auto, cpu, cuda or cuda:N.", "device"},
        {"threads", "CPU threads (default: all cores).", "n"},
        {"data-dir", "Directory holding the IDX files (default: MANTISSA_DATA_DIR or the Debian dataset).", "dir"},
        {"limit-train", "Use only the first N training samples.", "n"},
        {"limit-test", "Use only the first N test samples.", "n"},
        {"numerics-every", "Per-layer numerics statistics every N steps (1 to 1000; 0 = off).", "n"},
    });
}

RunConfig runConfigFromOptions(const QCommandLineParser& parser, const QStringList& positional)
{
    RunConfig config;
    if (parser.isSet("preset")) {
        if (!positional.isEmpty())
            throw ConfigError("give either --preset NAME or CONFIG.json, not both");
        config = presetConfig(parser.value("preset").toStdString());
    } else if (!positional.isEmpty()) {
        const QString path = positional.first();
        config = loadRunConfigFile(path.toStdString());
        if (config.name.empty())
            config.name = QFileInfo(path).completeBaseName().toStdString();
    } else {
        throw ConfigError("no model given: use --preset NAME (for example --preset mlp) or a CONFIG.json file");
    }

    if (parser.isSet("precision")) {
        const auto mode = parsePrecisionMode(parser.value("precision").toStdString());
        if (!mode)
            throw ConfigError("--precision is \"" + parser.value("precision").toStdString() +
                              "\"; expected fp32, fp16, mixed-fp16, mixed-bf16 or bf16");
        config.precision = *mode;
    }
    if (parser.isSet("loss-scale")) {
        const QString value = parser.value("loss-scale");
        if (value == "none" || value == "dynamic" || value == "auto") {
            config.lossScale.type = value.toStdString();
        } else {
            bool ok = false;
            const float scale = value.toFloat(&ok);
            if (!ok || scale <= 0)
                throw ConfigError("--loss-scale is \"" + value.toStdString() + "\"; expected none, dynamic or a positive number");
            config.lossScale.type = "static";
            config.lossScale.value = scale;
        }
    }
    if (parser.isSet("epochs"))
        config.training.epochs = static_cast<int>(integerOption(parser, "epochs", 1));
    if (parser.isSet("numerics-every")) {
        const std::int64_t every = integerOption(parser, "numerics-every", 0);
        if (every > 1000)
            throw ConfigError("--numerics-every expects 0 (off) or 1 to 1000 steps, got " + std::to_string(every));
        config.numerics.every = static_cast<int>(every);
    }
    if (parser.isSet("max-steps"))
        config.training.maxSteps = integerOption(parser, "max-steps", 1);
    if (parser.isSet("batch-size"))
        config.training.batchSize = integerOption(parser, "batch-size", 1);
    if (parser.isSet("seed"))
        config.training.seed = static_cast<std::uint64_t>(integerOption(parser, "seed", 0));
    if (parser.isSet("device"))
        config.training.device = parser.value("device").toStdString();
    if (parser.isSet("threads"))
        config.training.threads = static_cast<int>(integerOption(parser, "threads", 1));
    if (parser.isSet("data-dir"))
        config.data.directory = parser.value("data-dir").toStdString();
    if (parser.isSet("limit-train"))
        config.data.limitTrain = integerOption(parser, "limit-train", 1);
    if (parser.isSet("limit-test"))
        config.data.limitTest = integerOption(parser, "limit-test", 1);
    return config;
}

} // namespace mantissa::cli
