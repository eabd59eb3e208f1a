// The model section: the layer table the editor shows (type, output shape, parameters,
// FLOPs, the precision each layer computes in), the totals, and the tensor-core alignment
// advice of the 16-bit runs; for an imported model, its file and nodes instead
// (imported_model_section.h).
#include "engine/config/config_field.h"
#include "engine/model/model.h"
#include "engine/model/model_file.h"
#include "engine/model/tensor_core_alignment.h"
#include "engine/util/format_number.h"
#include "report/imported_model_section.h"
#include "report/report_format.h"
#include "report/report_sections.h"

#include <optional>

namespace mantissa::report {

namespace {

// The engine's one-line summary of a layer (config_field.h), as the CLI and the editor show it.
QString describeLayer(const LayerSpec& spec) { return QString::fromStdString(layerSummary(spec)); }

// 1.86e6 -> "1.86 M": FLOPs and parameter totals span six orders of magnitude.
QString withPrefix(double value)
{
    static const char* const prefixes[] = {"", " k", " M", " G", " T"};
    int prefix = 0;
    while (value >= 1000 && prefix < 4) {
        value /= 1000;
        ++prefix;
    }
    return QString::number(value, 'g', 3) + QLatin1String(prefixes[prefix]);
}

// Runs with the same model share one table; the key is what the table shows: for an imported
// model, the bytes of its file (their hash, else its path).
QString modelKey(const RunData& run)
{
    QStringList key{QString::fromStdString(Shape(run.config->model.input).toString())};
    if (!run.config->model.onnx.empty())
        return (key << QStringLiteral("onnx")
                    << (run.info.modelSha256.isEmpty() ? QString::fromStdString(run.config->model.onnx)
                                                       : run.info.modelSha256))
            .join(QLatin1Char('|'));
    for (const LayerSpec& layer : run.config->model.layers)
        key << describeLayer(layer) << QString::fromStdString(layerFormatText(layer.precision));
    return key.join(QLatin1Char('|'));
}

void appendModelTable(ReportDocument& document, const QList<const RunData*>& runs)
{
    const RunData& first = *runs.first();
    const ModelSpec& spec = first.config->model;
    const ModelReport& model = first.model;
    // One precision column per mode among the runs: what differs between fp32 and
    // mixed-fp16 is exactly where each layer computes.
    QList<PrecisionMode> modes;
    for (const RunData* run : runs) {
        if (!modes.contains(run->config->precision))
            modes << run->config->precision;
    }
    ReportTable table;
    table.header = {QStringLiteral("#"), QStringLiteral("Layer"), QStringLiteral("Output shape"),
                    QStringLiteral("Parameters"), QStringLiteral("FLOPs/sample")};
    table.numeric = {true, false, false, true, true};
    for (PrecisionMode mode : modes) {
        table.header << (modes.size() == 1
                             ? QStringLiteral("Computes in")
                             : QStringLiteral("In %1").arg(QString::fromStdString(precisionModeName(mode))));
        table.numeric << false;
    }
    QStringList input{QString(), QStringLiteral("input"), QString::fromStdString(Shape(spec.input).toString())};
    while (input.size() < table.header.size())
        input << QString();
    table.rows << input;
    for (const LayerReport& layer : model.layers) {
        const LayerSpec& layerSpec = spec.layers[size_t(layer.index)];
        QStringList row{QString::number(layer.index), describeLayer(layerSpec),
                        layer.error.empty() ? QString::fromStdString(layer.outputShape.toString())
                                            : QStringLiteral("invalid"),
                        formatCount(layer.parameters), formatCount(layer.flopsPerSample)};
        for (PrecisionMode mode : modes)
            row << QString::fromUtf8(dtypeName(PrecisionPolicy(mode).layer(layerSpec.precision).compute()));
        table.rows << row;
    }
    QStringList total{QString(), QStringLiteral("Total"), QString(), formatCount(model.totalParameters),
                      formatCount(model.totalFlopsPerSample)};
    for (qsizetype i = 0; i < modes.size(); ++i)
        total << QString();
    table.rows << total;
    table.boldRow = int(table.rows.size() - 1);

    const QString caption =
        QStringLiteral("%1 parameters (%2 as fp32), %3FLOP per sample forward, %4 activation values per sample. "
                       "FLOPs count a multiply-add as two.")
            .arg(withPrefix(double(model.totalParameters)),
                 QString::fromStdString(formatBytes(std::uint64_t(model.totalParameters) * 4)),
                 withPrefix(double(model.totalFlopsPerSample)), withPrefix(double(model.activationValuesPerSample)));
    document.table(table, caption);
    if (!model.valid())
        document.paragraph(QStringLiteral("The model does not validate: %1").arg(QString::fromStdString(model.error)));
}

// The engine's advice (model/tensor_core_alignment) for each run of a group that has any: only
// 16-bit runs do. Runs with the same advice (same precision and batch) share one list.
void appendTensorCoreAdvice(ReportDocument& document, const QList<const RunData*>& runs)
{
    QList<QStringList> advice;
    QList<QStringList> labels;
    for (const RunData* run : runs) {
        QStringList lines;
        for (const std::string& line : tensorCoreAdvice(*run->config, run->model).messages())
            lines << QString::fromStdString(line);
        if (lines.isEmpty())
            continue;
        const qsizetype at = advice.indexOf(lines);
        if (at >= 0) {
            labels[at] << run->label;
        } else {
            advice << lines;
            labels << QStringList{run->label};
        }
    }
    for (qsizetype i = 0; i < advice.size(); ++i) {
        document.paragraph(QStringLiteral("Tensor-core alignment of %1: fp16 and bf16 tensor cores are used fully when "
                                          "every GEMM extent is a multiple of 8; on a GPU these pad or run on slower "
                                          "kernels (on the CPU it makes no difference).")
                               .arg(labels[i].join(QStringLiteral(", "))));
        document.bullets(advice[i]);
    }
}

// What each recipe run's recipe covered (gemm_coverage.h): "mxfp8: 25 of 25 GEMMs quantised",
// or which GEMMs it kept and why, and a warning where it quantised none.
void appendRecipeCoverage(ReportDocument& document, const QList<const RunData*>& runs)
{
    QStringList lines;
    for (const RunData* run : runs) {
        try {
            // An imported model is read from the file the run store keeps, wherever its own went.
            ModelSpec model = run->config->model;
            if (run->modelFile)
                model.onnx = run->modelFile->path;
            const GemmCoverage coverage = plannedGemmCoverage(model, run->config->precision, run->config->recipe);
            if (coverage.summary().empty())
                continue;
            QString line = QStringLiteral("%1: %2").arg(run->label, QString::fromStdString(coverage.summary()));
            if (const std::optional<std::string> warning = coverage.warning())
                line += QStringLiteral(". Warning: %1").arg(QString::fromStdString(*warning));
            if (!lines.contains(line))
                lines << line;
        } catch (const ConfigError&) {
            continue; // the model table already says the model does not validate
        }
    }
    if (lines.isEmpty())
        return;
    document.paragraph(QStringLiteral("The sub-16-bit recipes quantise the inputs of these GEMMs:"));
    document.bullets(lines);
}

} // namespace

void appendModel(ReportDocument& document, const ReportData& data)
{
    document.heading(QStringLiteral("Model"));
    QList<QString> keys;
    QList<QList<const RunData*>> groups;
    for (const RunData& run : data.runs) {
        if (!run.config) {
            document.paragraph(QStringLiteral("The config of %1 does not parse with this version of Mantissa (%2); "
                                              "its layer table is not shown. The stored JSON is in the appendix.")
                                   .arg(run.info.name, run.configError));
            continue;
        }
        const QString key = modelKey(run);
        const qsizetype at = keys.indexOf(key);
        if (at >= 0) {
            groups[at] << &run;
        } else {
            keys << key;
            groups << QList<const RunData*>{&run};
        }
    }
    for (const QList<const RunData*>& group : groups) {
        if (groups.size() > 1) {
            QStringList names;
            for (const RunData* run : group)
                names << run->label;
            document.heading(QStringLiteral("Model of %1").arg(names.join(QStringLiteral(", "))), 2);
        } else if (data.isComparison()) {
            document.paragraph(QStringLiteral("Every run trains the same model."));
        }
        if (group.first()->config->model.onnx.empty()) {
            appendModelTable(document, group);
            appendTensorCoreAdvice(document, group);
        } else {
            appendImportedModel(document, group);
        }
        appendRecipeCoverage(document, group);
    }
}

} // namespace mantissa::report
