// mantissa-cli quantize --format F VALUES... | --input FILE: what each value becomes in a
// sub-16-bit format (issue 17): its code, the value that code stands for, the block's scale
// and the error, then the blocks and the statistics the numerics lens will show (clipped
// blocks, values flushed to zero, SQNR). A user can check what 957 becomes in MXFP8 without
// writing code.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/float_text.h"
#include "cli/text_table.h"
#include "engine/numerics/block_quantizer.h"

#include <QFile>
#include <QRegularExpression>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "quantize";
constexpr const char* kUsage = "--format F [--rounding rne|stochastic] [--seed S] [--saturate] [--block N] "
                               "[--scale-rule floor|ceil|rceil] [--pow2-scales] [--pad] [--row N] [--tile N] [--json] "
                               "(VALUES... | --input FILE)";

// strtof, not QString::toFloat: one rounding from the decimal text to fp32 (parsing to double
// first would round twice), and "nan", "inf" and hex floats such as 0x1p-9 are accepted.
std::optional<float> parseFloat(const QString& text)
{
    const QByteArray bytes = text.trimmed().toLatin1();
    if (bytes.isEmpty())
        return std::nullopt;
    char* end = nullptr;
    const float value = std::strtof(bytes.constData(), &end);
    if (end != bytes.constData() + bytes.size())
        return std::nullopt;
    return value;
}

struct Values {
    std::vector<float> numbers;
    QString error; // empty when all parsed
};

Values valuesFromArguments(const QStringList& texts)
{
    Values v;
    for (qsizetype i = 0; i < texts.size(); ++i) {
        const auto value = parseFloat(texts[i]);
        if (!value) {
            v.error = QStringLiteral("value %1, \"%2\", is not a number").arg(i + 1).arg(texts[i]);
            return v;
        }
        v.numbers.push_back(*value);
    }
    return v;
}

// Numbers separated by white space or commas; '#' starts a comment.
Values valuesFromFile(const QString& path)
{
    Values v;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text)) {
        v.error = QStringLiteral("cannot read the input file %1: %2").arg(path, file.errorString());
        return v;
    }
    static const QRegularExpression separators(QStringLiteral("[\\s,]+"));
    int lineNumber = 0;
    while (!file.atEnd()) {
        ++lineNumber;
        QString line = QString::fromUtf8(file.readLine());
        line.truncate(line.indexOf(u'#') < 0 ? line.size() : line.indexOf(u'#'));
        for (const QString& token : line.split(separators, Qt::SkipEmptyParts)) {
            const auto value = parseFloat(token);
            if (!value) {
                v.error = QStringLiteral("%1, line %2: \"%3\" is not a number").arg(path).arg(lineNumber).arg(token);
                return v;
            }
            v.numbers.push_back(*value);
        }
    }
    if (v.numbers.empty())
        v.error = QStringLiteral("the input file %1 holds no numbers").arg(path);
    return v;
}

template <typename E>
std::optional<E> enumOption(const QCommandLineParser& parser, const char* option, QString& error)
{
    const QString text = parser.value(QString::fromLatin1(option));
    if (const auto value = parseEnum<E>(text.toStdString()))
        return value;
    error = QStringLiteral("--%1 is \"%2\"; expected %3")
                .arg(QString::fromLatin1(option), text, QString::fromStdString(enumKeyList<E>()));
    return std::nullopt;
}

struct Request {
    QString name;
    QuantFormat format;
    std::size_t rowLength = 0;
    bool json = false;
    bool summaryOnly = false;
};

// The format and its options; an error message instead where they do not fit together.
QString parseFormat(const QCommandLineParser& parser, Request& request)
{
    request.name = parser.value("format");
    if (request.name.isEmpty())
        return QStringLiteral("--format is required; one of %1").arg(QString::fromStdString(quantFormatNameList()));
    const auto format = quantFormatNamed(request.name.toStdString());
    if (!format) {
        return QString::fromStdString(unknownQuantFormatMessage(request.name.toStdString()));
    }
    QuantFormat f = *format;
    QString error;
    const auto rounding = enumOption<Rounding>(parser, "rounding", error);
    if (!rounding)
        return error;
    f.encoding.rounding = *rounding;
    bool ok = true;
    f.encoding.seed = parser.value("seed").toULongLong(&ok);
    if (!ok)
        return QStringLiteral("--seed must be a non-negative integer, not \"%1\"").arg(parser.value("seed"));
    if (parser.isSet("saturate"))
        f.encoding.overflow = OverflowRule::Saturate;
    if (parser.isSet("block")) {
        if (!f.isBlocked())
            return QStringLiteral("--block applies to the block formats (mxfp8, mxfp6, mxfp4, nvfp4, fp8-block...), "
                                  "not %1")
                .arg(request.name);
        const qlonglong block = parser.value("block").toLongLong(&ok);
        if (!ok || block < 1)
            return QStringLiteral("--block must be a positive integer, not \"%1\"").arg(parser.value("block"));
        f.blockSize = static_cast<std::size_t>(block);
    }
    if (parser.isSet("scale-rule")) {
        if (f.scheme != ScalingScheme::Mx)
            return QStringLiteral("--scale-rule applies to the MX formats (E8M0 scales), not %1").arg(request.name);
        const auto rule = enumOption<MxScaleRule>(parser, "scale-rule", error);
        if (!rule)
            return error;
        f.scaleRule = *rule;
    }
    if (parser.isSet("pow2-scales")) {
        if (f.scheme != ScalingScheme::PerTensor && f.scheme != ScalingScheme::Fp32Blocks)
            return QStringLiteral("--pow2-scales applies to the fp32-scaled formats (fp8-tensor, fp8-block), not %1")
                .arg(request.name);
        f.powerOfTwoScales = true;
    }
    if (parser.isSet("pad"))
        f.partialBlocks = PartialBlock::Pad;
    if (parser.isSet("row")) {
        const qlonglong row = parser.value("row").toLongLong(&ok);
        if (!ok || row < 1)
            return QStringLiteral("--row must be a positive integer, not \"%1\"").arg(parser.value("row"));
        request.rowLength = static_cast<std::size_t>(row);
    }
    if (parser.isSet("tile")) { // NVFP4's 16x16 weight tiles: a block spans N rows too
        const qlonglong rows = parser.value("tile").toLongLong(&ok);
        if (!ok || rows < 1)
            return QStringLiteral("--tile must be a positive integer, not \"%1\"").arg(parser.value("tile"));
        if (!f.isBlocked())
            return QStringLiteral("--tile applies to the block formats (fp8-block, MX, NVFP4), not %1")
                .arg(request.name);
        if (!parser.isSet("row"))
            return QStringLiteral("--tile needs --row: tiles span neighbouring rows of --row values");
        f.blockRows = static_cast<std::size_t>(rows);
    }
    request.format = f;
    request.json = parser.isSet("json");
    request.summaryOnly = parser.isSet("summary");
    return {};
}

// The refusal of a partial block, in the CLI's words (the engine's names no option).
QString checkWholeBlocks(const Request& request, std::size_t count)
{
    const QuantFormat& f = request.format;
    const std::size_t row = request.rowLength == 0 ? count : request.rowLength;
    if (!f.isBlocked() || f.partialBlocks == PartialBlock::Pad || count % row != 0)
        return {};
    if (const std::size_t rows = count / row; row % f.blockSize == 0 && rows % f.blockRows != 0)
        return QStringLiteral("%1 rows of %2 values are not a multiple of the tile's %3 rows (--tile) of %4; give a "
                              "multiple of %3 rows, or --pad to pad the last tile with zeros")
            .arg(rows)
            .arg(row)
            .arg(f.blockRows)
            .arg(request.name);
    if (row % f.blockSize == 0)
        return {};
    return QStringLiteral("%1 %2 not a multiple of the block size %3 of %4; give a multiple of %3 values, another "
                          "--block, or --pad to pad the last block with zeros (zeros change neither the block's "
                          "largest value nor its scale)")
        .arg(row)
        .arg(request.rowLength == 0 ? QStringLiteral("values are") : QStringLiteral("values per row (--row) are"))
        .arg(f.blockSize)
        .arg(request.name);
}

QString scaleCodeText(const BlockScale& block)
{
    return block.scaleCode < 0 ? QStringLiteral("-") : formatCode(static_cast<unsigned>(block.scaleCode));
}

nlohmann::json scaleExponentsJson(const QuantStats& stats)
{
    nlohmann::json histogram = nlohmann::json::object();
    for (const auto& [exponent, count] : stats.scaleExponents)
        histogram[std::to_string(exponent)] = count;
    return histogram;
}

QString plural(std::size_t n, const char* one, const char* many)
{
    return QStringLiteral("%1 %2").arg(n).arg(QString::fromLatin1(n == 1 ? one : many));
}

QString percent(double fraction) { return QString::number(100.0 * fraction, 'f', 1) + u'%'; }

// Values a plain format's overflow rule decided (the scaled formats count clipped blocks).
std::size_t overflowedValues(const Request& request, std::span<const float> values)
{
    std::size_t n = 0;
    for (const float v : values)
        n += std::isfinite(v) &&
             encodeMiniFloatWith(v, request.format.element, Rounding::NearestEven, request.format.encoding.overflow, 0)
                 .overflowed;
    return n;
}

QString summaryLine(const Request& request, std::span<const float> values, const QuantizedTensor& q,
                    const QuantStats& stats)
{
    QStringList parts;
    if (request.format.scheme == ScalingScheme::None) {
        const std::size_t overflowed = overflowedValues(request, values);
        parts << QStringLiteral("%1 overflowed (%2)")
                     .arg(overflowed)
                     .arg(request.format.encoding.overflow == OverflowRule::Saturate ||
                                  !miniFloatFormat(request.format.element).hasNan()
                              ? QStringLiteral("saturated")
                              : QStringLiteral("non-saturating"));
    } else {
        parts << plural(stats.blocks, "block", "blocks")
              << QStringLiteral("%1 clipped (%2)").arg(stats.clippedBlocks).arg(percent(stats.clippedBlockFraction()));
        if (stats.nanScaleBlocks > 0)
            parts << QStringLiteral("%1 with a NaN scale").arg(stats.nanScaleBlocks);
    }
    parts << QStringLiteral("%1 flushed to zero (%2)").arg(stats.flushedToZero).arg(percent(stats.flushedFraction()));
    if (stats.nonFinite > 0)
        parts << plural(stats.nonFinite, "NaN or Inf input", "NaN or Inf inputs");
    const double sqnr = stats.sqnrDb();
    parts << QStringLiteral("SQNR %1").arg(std::isfinite(sqnr) ? QString::number(sqnr, 'f', 2) + QStringLiteral(" dB")
                                                               : formatFloat(static_cast<float>(sqnr)));
    if (request.format.scheme == ScalingScheme::Nvfp4)
        parts << QStringLiteral("tensor scale %1").arg(formatFloat(q.tensorScale));
    return plural(stats.elements, "value", "values") + QStringLiteral(": ") + parts.join(QStringLiteral(", "));
}

void printJson(const Request& request, std::span<const float> values, const QuantizedTensor& q,
               std::span<const float> decoded, const QuantStats& stats)
{
    const bool scaled = request.format.scheme != ScalingScheme::None;
    if (!request.summaryOnly) {
        for (std::size_t i = 0; i < values.size(); ++i) {
            nlohmann::json line = {{"kind", "value"},
                                   {"index", i},
                                   {"value", floatJson(values[i])},
                                   {"code", formatCode(q.codes[i]).toStdString()},
                                   {"decoded", floatJson(decoded[i])},
                                   {"error", floatJson(decoded[i] - values[i])}};
            if (scaled) {
                line["block"] = q.blockOf(i);
                line["element"] = floatJson(decodeMiniFloat(q.codes[i], request.format.element));
                line["scale"] = floatJson(q.blocks[q.blockOf(i)].scale);
            }
            std::printf("%s\n", line.dump().c_str());
        }
        for (std::size_t b = 0; scaled && b < q.blocks.size(); ++b) {
            const BlockScale& block = q.blocks[b];
            nlohmann::json line = {{"kind", "block"},
                                   {"block", b},
                                   {"amax", floatJson(block.amax)},
                                   {"scale", floatJson(block.scale)},
                                   {"clipped", block.clipped},
                                   {"nan_scale", block.nanScale}};
            line["scale_code"] =
                block.scaleCode < 0 ? nlohmann::json(nullptr) : nlohmann::json(scaleCodeText(block).toStdString());
            std::printf("%s\n", line.dump().c_str());
        }
    }
    nlohmann::json summary = {{"kind", "summary"},
                              {"format", request.name.toStdString()},
                              {"description", describeQuantFormat(request.format)},
                              {"values", stats.elements},
                              {"blocks", stats.blocks},
                              {"clipped_blocks", stats.clippedBlocks},
                              {"nan_scale_blocks", stats.nanScaleBlocks},
                              {"flushed_to_zero", stats.flushedToZero},
                              {"non_finite_inputs", stats.nonFinite},
                              {"sqnr_db", floatJson(static_cast<float>(stats.sqnrDb()))}};
    if (scaled)
        summary["scale_exponents"] = scaleExponentsJson(stats);
    else
        summary["overflowed"] = overflowedValues(request, values);
    if (request.format.scheme == ScalingScheme::Nvfp4)
        summary["tensor_scale"] = floatJson(q.tensorScale);
    std::printf("%s\n", summary.dump().c_str());
}

void printText(const Request& request, std::span<const float> values, const QuantizedTensor& q,
               std::span<const float> decoded, const QuantStats& stats)
{
    const bool scaled = request.format.scheme != ScalingScheme::None;
    std::printf("%s: %s%s\n", qPrintable(request.name), describeQuantFormat(request.format).c_str(),
                request.format.encoding.rounding == Rounding::Stochastic
                    ? qPrintable(QStringLiteral(", stochastic rounding (seed %1)").arg(request.format.encoding.seed))
                    : ", round to nearest even");
    using Align = TextTable::Align;
    if (!request.summaryOnly) {
        TextTable table;
        table.addColumn(QStringLiteral("index"), Align::Right);
        table.addColumn(QStringLiteral("value"), Align::Right);
        if (scaled)
            table.addColumn(QStringLiteral("block"), Align::Right);
        table.addColumn(QStringLiteral("code"), Align::Right);
        if (scaled) {
            table.addColumn(QStringLiteral("element"), Align::Right);
            table.addColumn(QStringLiteral("scale"), Align::Right);
        }
        table.addColumn(QStringLiteral("decoded"), Align::Right);
        table.addColumn(QStringLiteral("error"), Align::Right);
        for (std::size_t i = 0; i < values.size(); ++i) {
            QStringList row = {QString::number(i), formatFloat(values[i])};
            if (scaled)
                row << QString::number(q.blockOf(i));
            row << formatCode(q.codes[i]);
            if (scaled) {
                row << formatFloat(decodeMiniFloat(q.codes[i], request.format.element))
                    << formatPowerOfTwo(q.blocks[q.blockOf(i)].scale);
            }
            row << formatFloat(decoded[i]) << formatFloat(decoded[i] - values[i]);
            table.addRow(row);
        }
        table.print(stdout);
        if (scaled) {
            std::printf("\n");
            TextTable blocks;
            blocks.addColumn(QStringLiteral("block"), Align::Right);
            blocks.addColumn(QStringLiteral("amax"), Align::Right);
            blocks.addColumn(QStringLiteral("scale code"), Align::Right);
            blocks.addColumn(QStringLiteral("scale"), Align::Right);
            blocks.addColumn(QStringLiteral("clipped"));
            for (std::size_t b = 0; b < q.blocks.size(); ++b) {
                const BlockScale& block = q.blocks[b];
                blocks.addRow({QString::number(b), formatFloat(block.amax), scaleCodeText(block),
                               formatPowerOfTwo(block.scale),
                               block.nanScale ? QStringLiteral("NaN scale")
                                              : (block.clipped ? QStringLiteral("yes") : QStringLiteral("-"))});
            }
            blocks.print(stdout);
        }
    }
    std::printf("\n%s\n", qPrintable(summaryLine(request, values, q, stats)));
    if (scaled) {
        QStringList exponents;
        for (const auto& [exponent, count] : stats.scaleExponents)
            exponents << QStringLiteral("2^%1 x%2").arg(exponent).arg(count);
        std::printf("block scales: %s\n", qPrintable(exponents.join(QStringLiteral(", "))));
    }
}

// QCommandLineParser reads "-1.5" as the short options 1, . and 5. Every argument that is a
// number and not an option's value is a value: they go after "--", in their order, so that
// negative values need no "--" of the user's.
QStringList valuesAfterOptions(const QStringList& arguments)
{
    static const QStringList takesValue{"--format",     "--rounding", "--seed", "--block",
                                        "--scale-rule", "--row",      "--tile", "--input"};
    QStringList options{arguments.value(0)}, values;
    for (qsizetype i = 1; i < arguments.size(); ++i) {
        const QString& argument = arguments[i];
        if (argument == QLatin1String("--")) {
            values += arguments.mid(i + 1);
            break;
        }
        if (argument.startsWith(u'-') && !parseFloat(argument)) {
            options << argument;
            if (takesValue.contains(argument) && i + 1 < arguments.size())
                options << arguments[++i];
            continue;
        }
        values << argument;
    }
    return options + QStringList{QStringLiteral("--")} + values;
}

} // namespace

int runQuantizeCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "What values become in a sub-16-bit format: code, decoded value, block scale and error per value, then the "
        "blocks (scale, clipped) and the statistics (SQNR, flushed to zero). Negative values are values: "
        "quantize --format e4m3 -3 449.");
    parser.addPositionalArgument("values", "The values (decimal, nan, inf, or hex floats such as 0x1p-9).",
                                 "VALUES...");
    parser.addOption({"format",
                      QStringLiteral("The format: %1 (mantissa-cli formats lists them).")
                          .arg(QString::fromStdString(quantFormatNameList())),
                      "F"});
    parser.addOption({"rounding", "rne (round to nearest even, the default) or stochastic.", "R", "rne"});
    parser.addOption({"seed", "Stochastic rounding's seed (default 0): the same seed, the same codes.", "S", "0"});
    parser.addOption({"saturate",
                      "Plain formats: overflow to the largest finite value instead of NaN (e4m3) or Inf (e5m2). "
                      "The scaled formats always saturate their elements."});
    parser.addOption({"block", "Values per block (MX 32, NVFP4 16, fp8-block 128).", "N"});
    parser.addOption({"scale-rule", "MX formats: floor (OCP MX v1.0, the default), ceil or rceil.", "R"});
    parser.addOption({"pow2-scales", "fp8-tensor, fp8-block: round the fp32 scale down to a power of two."});
    parser.addOption({"pad", "Pad a partial last block with zeros instead of refusing it."});
    parser.addOption({"row", "Values per row: blocks run along rows and never cross one (default: one row).", "N"});
    parser.addOption({"tile",
                      "2D blocks: each block also spans N neighbouring rows (nvfp4 --row K --tile 16: NVIDIA's "
                      "16x16 weight tiles); needs --row.",
                      "N"});
    parser.addOption(
        {"input", "Read the values from FILE (separated by spaces, commas or lines; # comments).", "FILE"});
    parser.addOption({"summary", "Only the statistics, not every value and block."});
    parser.addOption({"json", "One JSON object per line: each value, each block, then the summary."});
    if (const auto exit = parseCommandLine(parser, valuesAfterOptions(arguments), kCommand))
        return *exit;
    Request request;
    if (const QString error = parseFormat(parser, request); !error.isEmpty())
        return fail(kCommand, error, kExitBadInput);
    const QStringList texts = parser.positionalArguments();
    if (parser.isSet("input") == !texts.isEmpty())
        return fail(kCommand,
                    QStringLiteral("give the values or --input FILE (one of the two); usage: mantissa-cli "
                                   "quantize %1")
                        .arg(QString::fromLatin1(kUsage)),
                    kExitBadInput);
    const Values values = parser.isSet("input") ? valuesFromFile(parser.value("input")) : valuesFromArguments(texts);
    if (!values.error.isEmpty())
        return fail(kCommand, values.error, kExitBadInput);
    if (const QString error = checkWholeBlocks(request, values.numbers.size()); !error.isEmpty())
        return fail(kCommand, error, kExitBadInput);
    try {
        const QuantizedTensor q = quantize(values.numbers, request.rowLength, request.format);
        std::vector<float> decoded(values.numbers.size());
        dequantize(q, decoded);
        const QuantStats stats = measureQuantization(values.numbers, q, decoded);
        if (request.json)
            printJson(request, values.numbers, q, decoded, stats);
        else
            printText(request, values.numbers, q, decoded, stats);
        return kExitOk;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
