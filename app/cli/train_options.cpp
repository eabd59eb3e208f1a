#include "cli/train_options.h"

#include "engine/config/config_field.h"
#include "engine/config/presets.h"
#include "engine/data/file_dataset.h"
#include "engine/model/model.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/onnx_model.h"
#include "engine/util/check.h"

#include <QFileInfo>

namespace mantissa::cli {

namespace {

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

// "--batch-size n  Samples per step; ... (1 to 65536 samples; default 128)": a field's option
// as its row describes it.
QCommandLineOption fieldOption(const RunField& field)
{
    std::string help(field.description);
    if (field.kind() == FieldKind::Choice)
        help += " One of " + field.choiceKeys() + ".";
    help += " (" + (field.hasRange() ? field.rangeText() + "; " : std::string()) + "default " +
            (field.defaultText().empty() ? "\"\"" : field.defaultText()) + ")";
    const char* valueName = field.kind() == FieldKind::Choice ? "key" : field.kind() == FieldKind::Text ? "text" : "n";
    return {QString::fromUtf8(field.option.data(), qsizetype(field.option.size())), QString::fromStdString(help),
            valueName};
}

} // namespace

void addTrainOptions(QCommandLineParser& parser)
{
    parser.addOptions({
        {"preset", QString::fromStdString("Train a built-in preset: " + presetList() + "."), "name"},
        {"loss-scale", QString::fromStdString(namedLossScales() + "or a static value such as 128."), "scale"},
        {"data",
         QStringLiteral("The data: a built-in dataset (fashion-mnist, mnist, synthetic, text), text:FILE for a "
                        "text file or folder (byte-level language models), or the path of your own data: an image "
                        "folder, a .csv or .tsv table, .npy or .npz arrays, IDX files (--data-format where the "
                        "extension does not tell; docs/data.md)."),
         "source"},
        {"input-shape",
         QStringLiteral("An ONNX model's input shape per sample, where the file leaves it dynamic: 3x32x32, 128."),
         "shape"},
        {"set",
         "Any config field, as PATH=VALUE (repeatable): --set optimizer.lr=0.01 --set model.input=3,32,32. "
         "docs/config.md lists every field.",
         "path=value"},
    });
    for (const RunField& field : runConfigFields())
        if (!field.option.empty())
            parser.addOption(fieldOption(field));
}

RunConfig runConfigFromOptions(const QCommandLineParser& parser, const QStringList& positional,
                               const std::optional<RunConfig>& base)
{
    RunConfig config;
    std::string onnxModel; // MODEL.onnx given in place of a config
    if (base) {
        if (parser.isSet("preset") || !positional.isEmpty())
            throw ConfigError("give a stored run (--from-run) or --preset NAME, CONFIG.json or MODEL.onnx, not both");
        config = *base;
    } else if (parser.isSet("preset")) {
        if (!positional.isEmpty())
            throw ConfigError("give either --preset NAME or CONFIG.json (or MODEL.onnx), not both");
        config = presetConfig(parser.value("preset").toStdString());
    } else if (!positional.isEmpty() && onnx_import::isOnnxPath(positional.first().toStdString())) {
        onnxModel = positional.first().toStdString();
        config.name = QFileInfo(positional.first()).completeBaseName().toStdString();
    } else if (!positional.isEmpty()) {
        const QString path = positional.first();
        config = loadRunConfigFile(path.toStdString());
        if (config.name.empty())
            config.name = QFileInfo(path).completeBaseName().toStdString();
    } else {
        throw ConfigError(
            "no model given: use --preset NAME (for example --preset mlp), a CONFIG.json file or a MODEL.onnx file");
    }

    if (parser.isSet("data")) {
        // --data-format decides how a path is read (a folder of text goes to the text dataset).
        if (parser.isSet("data-format"))
            runConfigField("data.format").setText(config, parser.value("data-format").toStdString(), "--data-format");
        useDataSource(config.data, parser.value("data").toStdString());
    }
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
    for (const RunField& field : runConfigFields()) {
        const QString option = QString::fromUtf8(field.option.data(), qsizetype(field.option.size()));
        if (!field.option.empty() && parser.isSet(option))
            field.setText(config, parser.value(option).toStdString(), "--" + std::string(field.option));
    }
    for (const QString& assignment : parser.values("set")) {
        const qsizetype eq = assignment.indexOf('=');
        const std::string path = assignment.left(eq).trimmed().toStdString();
        const RunField* field = eq > 0 ? findRunConfigField(path) : nullptr;
        if (!field)
            throw ConfigError("--set " + assignment.toStdString() +
                              (eq > 0 ? ": \"" + path + "\" is not a config field (docs/config.md lists them)"
                                      : ": expected PATH=VALUE, e.g. optimizer.lr=0.01"));
        field->setText(config, assignment.mid(eq + 1).trimmed().toStdString(), "--set " + path);
    }
    // The model file last, so that the data chosen above takes the model's shape where it can. Its
    // problems (not ONNX, an unsupported node, a shape that does not fit) surface here, before the
    // run database is opened.
    if (!onnxModel.empty()) {
        std::optional<std::vector<std::int64_t>> sampleShape;
        if (parser.isSet("input-shape"))
            sampleShape = onnx_import::parseShapeText(parser.value("input-shape").toStdString());
        onnx_import::useOnnxModel(config, onnxModel, sampleShape);
    } else if (parser.isSet("input-shape")) {
        throw ConfigError("--input-shape is for an ONNX model (MODEL.onnx); a config's shape is model.input");
    } else if (!config.model.onnx.empty()) {
        plannedGemmCoverage(config.model, config.precision, config.recipe);
    }
    validateRunConfig(config, "the command line");
    return config;
}

} // namespace mantissa::cli
