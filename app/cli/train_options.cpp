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
        throw ConfigError("--" + name.toStdString() + " expects an integer >= " + std::to_string(minimum) + ", got \"" +
                          parser.value(name).toStdString() + "\"");
    return value;
}

// "auto, none, dynamic": the loss-scale types --loss-scale takes by name (a static scale is
// given as its value).
std::string namedLossScales()
{
    std::string names;
    for (const auto& entry : enumEntries<LossScaleType>())
        if (entry.value != LossScaleType::Static)
            names += std::string(entry.key) + ", ";
    return names;
}

// "softmax, mlp, ...": the engine's presets, so the help cannot miss a new one.
std::string presetList()
{
    std::string names;
    for (const std::string& name : presetNames())
        names += (names.empty() ? "" : ", ") + name;
    return names;
}

} // namespace

void addTrainOptions(QCommandLineParser& parser)
{
    parser.addOptions({
        {"preset", QString::fromStdString("Train a built-in preset: " + presetList() + "."), "name"},
        {"precision", QString::fromStdString(enumKeyList<PrecisionMode>() + "."), "mode"},
        {"loss-scale", QString::fromStdString(namedLossScales() + "or a static value such as 128."), "scale"},
        {"epochs", "Number of epochs.", "n"},
        {"max-steps", "Stop after this many optimizer steps.", "n"},
        {"batch-size", "Mini-batch size.", "n"},
        {"seed", "Random seed (weights, data order, dropout).", "n"},
        {"device", "auto, cpu, cuda or cuda:N.", "device"},
        {"threads", "CPU threads (default: OMP_NUM_THREADS where set, else all cores).", "n"},
        {"cpu-kernels",
         QString::fromStdString("16-bit CPU kernels: " + enumKeyList<CpuKernels>() +
                                " (default: auto, native where the "
                                "CPU has it)."),
         "kind"},
        {"data",
         QString::fromStdString("The dataset: " + enumKeyList<DatasetKind>() +
                                ", or text:FILE for a text file or directory (byte-level language models)."),
         "source"},
        {"context", "Text: bytes per window, the sequence length (default 128).", "n"},
        {"data-dir", "Directory holding the IDX files (default: MANTISSA_DATA_DIR or the Debian dataset).", "dir"},
        {"limit-train", "Use only the first N training samples.", "n"},
        {"limit-test", "Use only the first N test samples.", "n"},
        {"numerics-every", "Per-layer numerics statistics every N steps (1 to 1000; 0 = off).", "n"},
        {"allreduce-dtype",
         QString::fromStdString("Under mpirun or srun: the type gradients are summed across ranks in: " +
                                enumKeyList<AllReduceType>() + " (default fp32)."),
         "type"},
        {"reduction",
         QString::fromStdString("Under mpirun or srun: where the average divides by the world size: " +
                                enumKeyList<ReductionOrder>() + " (default sum-then-divide)."),
         "order"},
        {"batch-norm",
         QString::fromStdString("Under mpirun or srun: batch-norm statistics of each rank's slice or of the "
                                "global batch: " +
                                enumKeyList<BatchNormSync>() + " (default per-rank)."),
         "sync"},
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

    if (parser.isSet("precision"))
        config.precision = parseEnumOrThrow<PrecisionMode>(parser.value("precision").toStdString(), "--precision");
    if (parser.isSet("loss-scale")) {
        // A number is a static scale; "static" alone would leave the value unsaid.
        const QString value = parser.value("loss-scale");
        const auto type = parseEnum<LossScaleType>(value.toStdString());
        if (type && *type != LossScaleType::Static) {
            config.lossScale.type = *type;
        } else {
            bool ok = false;
            const float scale = value.toFloat(&ok);
            if (!ok || scale <= 0)
                throw ConfigError("--loss-scale is \"" + value.toStdString() + "\"; expected " + namedLossScales() +
                                  "or a positive number");
            config.lossScale.type = LossScaleType::Static;
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
    if (parser.isSet("cpu-kernels"))
        config.training.cpuKernels =
            parseEnumOrThrow<CpuKernels>(parser.value("cpu-kernels").toStdString(), "--cpu-kernels");
    if (parser.isSet("data")) {
        const std::string source = parser.value("data").toStdString();
        if (source.starts_with("text:")) {
            config.data.dataset = DatasetKind::Text;
            config.data.directory = source.substr(5);
            if (config.data.directory.empty())
                throw ConfigError("--data text: needs a file or directory after the colon, e.g. text:book.txt");
        } else {
            config.data.dataset = parseEnumOrThrow<DatasetKind>(source, "--data");
        }
    }
    if (parser.isSet("context"))
        config.data.context = integerOption(parser, "context", 1);
    if (parser.isSet("data-dir"))
        config.data.directory = parser.value("data-dir").toStdString();
    if (parser.isSet("limit-train"))
        config.data.limitTrain = integerOption(parser, "limit-train", 1);
    if (parser.isSet("limit-test"))
        config.data.limitTest = integerOption(parser, "limit-test", 1);
    if (parser.isSet("allreduce-dtype"))
        config.distributed.allReduceType =
            parseEnumOrThrow<AllReduceType>(parser.value("allreduce-dtype").toStdString(), "--allreduce-dtype");
    if (parser.isSet("reduction"))
        config.distributed.reduction =
            parseEnumOrThrow<ReductionOrder>(parser.value("reduction").toStdString(), "--reduction");
    if (parser.isSet("batch-norm"))
        config.distributed.batchNorm =
            parseEnumOrThrow<BatchNormSync>(parser.value("batch-norm").toStdString(), "--batch-norm");
    return config;
}

} // namespace mantissa::cli
