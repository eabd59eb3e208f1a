#include "report/imported_model_section.h"

#include "engine/model/model_file.h"
#include "engine/util/format_number.h"
#include "report/report_format.h"

#include <QFileInfo>
#include <QMap>

namespace mantissa::report {

namespace {

// Up to this many nodes the section lists them all; a larger graph is summed up by operator.
constexpr qsizetype kNodeTableLimit = 40;

QString text(const std::string& value) { return QString::fromStdString(value); }

QString flops(double value) { return value > 0 ? text(formatSi(value)) : QString(); }

// "3 Gemm, 2 Relu, 1 Flatten": the operators by how many nodes run each, most first.
QString operatorCounts(const ModelFileDescription& model)
{
    QMap<QString, int> counts;
    for (const ModelFileNode& node : model.nodes)
        ++counts[text(node.opType)];
    QList<QPair<int, QString>> ordered;
    for (auto it = counts.cbegin(); it != counts.cend(); ++it)
        ordered.append({-it.value(), it.key()});
    std::sort(ordered.begin(), ordered.end());
    QStringList parts;
    for (const auto& [count, op] : ordered)
        parts << QStringLiteral("%1 %2").arg(-count).arg(op);
    return parts.join(QStringLiteral(", "));
}

// The precision modes among the runs, each with the run whose description gives its column.
QList<const RunData*> oneRunPerMode(const QList<const RunData*>& runs)
{
    QList<const RunData*> chosen;
    QList<PrecisionMode> modes;
    for (const RunData* run : runs)
        if (run->modelFile && !modes.contains(run->config->precision)) {
            modes << run->config->precision;
            chosen << run;
        }
    return chosen;
}

void addPrecisionHeaders(ReportTable& table, const QList<const RunData*>& columns)
{
    for (const RunData* run : columns) {
        table.header << (columns.size() == 1
                             ? QStringLiteral("Computes in")
                             : QStringLiteral("In %1").arg(text(precisionModeName(run->config->precision))));
        table.numeric << false;
    }
}

void appendNodeTable(ReportDocument& document, const ModelFileDescription& model, const QList<const RunData*>& columns)
{
    ReportTable table;
    table.header = {QStringLiteral("#"),          QStringLiteral("Node"),
                    QStringLiteral("Op"),         QStringLiteral("Output shape"),
                    QStringLiteral("Parameters"), QStringLiteral("FLOPs/sample")};
    table.numeric = {true, false, false, false, true, true};
    addPrecisionHeaders(table, columns);
    for (std::size_t i = 0; i < model.nodes.size(); ++i) {
        const ModelFileNode& node = model.nodes[i];
        QStringList row{QString::number(i + 1),
                        text(node.name),
                        text(node.opType),
                        text(node.outputShape),
                        node.parameters ? formatCount(node.parameters) : QString(),
                        flops(node.flopsPerSample)};
        for (const RunData* run : columns)
            row << (i < run->modelFile->nodes.size() ? text(run->modelFile->nodes[i].precision) : QString());
        table.rows << row;
    }
    document.table(table, QStringLiteral("Output shapes per sample; FLOPs count a multiply-add as two."));
}

// The larger graphs: one row per operator, its nodes' parameters and FLOPs summed.
void appendOperatorTable(ReportDocument& document, const ModelFileDescription& model)
{
    struct Sums {
        int nodes = 0;
        std::int64_t parameters = 0;
        double flops = 0;
    };
    QMap<QString, Sums> byOp;
    for (const ModelFileNode& node : model.nodes) {
        Sums& sums = byOp[text(node.opType)];
        ++sums.nodes;
        sums.parameters += node.parameters;
        sums.flops += node.flopsPerSample;
    }
    ReportTable table;
    table.header = {QStringLiteral("Op"), QStringLiteral("Nodes"), QStringLiteral("Parameters"),
                    QStringLiteral("FLOPs/sample")};
    table.numeric = {false, true, true, true};
    for (auto it = byOp.cbegin(); it != byOp.cend(); ++it)
        table.rows << QStringList{it.key(), QString::number(it->nodes),
                                  it->parameters ? formatCount(it->parameters) : QString(), flops(it->flops)};
    document.table(table, QStringLiteral("The %1 nodes by operator (more than %2, too many to list one by one).")
                              .arg(model.nodes.size())
                              .arg(kNodeTableLimit));
}

// Each run's advice (ModelFileNode::alignment); runs with the same advice share one list.
void appendAlignmentAdvice(ReportDocument& document, const QList<const RunData*>& runs)
{
    QList<QStringList> advice;
    QList<QStringList> labels;
    for (const RunData* run : runs) {
        if (!run->modelFile)
            continue;
        QStringList lines;
        for (const ModelFileNode& node : run->modelFile->nodes)
            if (!node.alignment.empty())
                lines
                    << QStringLiteral("node %1 (%2), %3").arg(text(node.name), text(node.opType), text(node.alignment));
        if (lines.isEmpty())
            continue;
        if (const qsizetype at = advice.indexOf(lines); at >= 0) {
            labels[at] << run->label;
        } else {
            advice << lines;
            labels << QStringList{run->label};
        }
    }
    for (qsizetype i = 0; i < advice.size(); ++i) {
        document.paragraph(QStringLiteral("Tensor-core alignment of %1: each GEMM's extents against what the format "
                                          "it runs in wants (fp16 and bf16 tiles of 8, FP8 tensor cores multiples of "
                                          "16, a block format whole blocks along K); on a GPU the others pad, run on "
                                          "slower kernels or leave partial blocks.")
                               .arg(labels[i].join(QStringLiteral(", "))));
        document.bullets(advice[i]);
    }
}

} // namespace

void appendImportedModel(ReportDocument& document, const QList<const RunData*>& runs)
{
    const RunData& first = *runs.first();
    const QString source = first.info.modelSource.isEmpty() ? text(first.config->model.onnx) : first.info.modelSource;
    const QString file = QFileInfo(source).fileName();
    const QString hash = first.info.modelSha256.isEmpty() ? QStringLiteral("not stored") : first.info.modelSha256;
    const RunData* described = nullptr;
    for (const RunData* run : runs)
        if (run->modelFile && !described)
            described = run;
    if (!described) {
        document.paragraph(QStringLiteral("Imported from the ONNX file %1 (%2, SHA-256 %3), which cannot be read "
                                          "here: %4")
                               .arg(file, source, hash, first.modelFileError));
        return;
    }
    const ModelFileDescription& model = *described->modelFile;
    const std::int64_t parameters = model.parameters;
    document.paragraph(
        QStringLiteral("Imported from the ONNX file %1 (%2, SHA-256 %3): input %4 per sample, %5 nodes (%6), %7 "
                       "parameters (%8 as fp32), %9FLOP per sample forward.")
            .arg(file, source, hash, text(Shape(first.config->model.input).toString()),
                 QString::number(model.nodes.size()), operatorCounts(model), formatCount(parameters),
                 text(formatBytes(static_cast<std::uint64_t>(parameters) * 4)),
                 model.flopsPerSample > 0 ? flops(model.flopsPerSample) + QLatin1Char(' ') : QStringLiteral("0 ")));
    if (static_cast<qsizetype>(model.nodes.size()) <= kNodeTableLimit)
        appendNodeTable(document, model, oneRunPerMode(runs));
    else
        appendOperatorTable(document, model);
    for (const RunData* run : runs)
        if (run->modelFile && !run->modelFile->problem.empty())
            document.paragraph(QStringLiteral("Under the settings of %1 the model does not compile here: %2")
                                   .arg(run->label, text(run->modelFile->problem)));
    appendAlignmentAdvice(document, runs);
}

} // namespace mantissa::report
