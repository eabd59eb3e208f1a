// mantissa-cli formats: the sub-16-bit formats (issue 17) with their bit fields, bias, range
// and special values, then the scaled formats `quantize --format` accepts. Every figure is
// computed from the engine's table of bit fields, so the output cannot drift from the code.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/float_text.h"
#include "cli/text_table.h"
#include "engine/numerics/quant_format.h"

#include <cstdio>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "formats";

QString latin1(std::string_view text) { return QString::fromLatin1(text.data(), qsizetype(text.size())); }

nlohmann::json formatJson(const MiniFloatFormat& f)
{
    return {{"name", std::string(enumKey(f.id))},
            {"title", std::string(enumEntry(f.id).displayName)},
            {"sign_bits", f.signBits},
            {"exponent_bits", f.exponentBits},
            {"mantissa_bits", f.mantissaBits},
            {"bias", f.bias},
            {"max", f.maxFinite()},
            {"min_normal", f.minNormal()},
            {"min_subnormal", f.minSubnormal()},
            {"specials", std::string(miniFloatSpecialsText(f.id))}};
}

} // namespace

int runFormatsCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription("The floating-point formats below 16 bits and the scaled formats built on them.");
    parser.addOption({"json", "One JSON object per format and line."});
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (const auto exit = requirePositionals(parser, 0, kCommand, "[--json]"))
        return *exit;
    if (parser.isSet("json")) {
        for (const MiniFloatFormat& f : miniFloatFormats())
            std::printf("%s\n", formatJson(f).dump().c_str());
        return kExitOk;
    }
    using Align = TextTable::Align;
    TextTable table;
    table.addColumn(QStringLiteral("name"));
    table.addColumn(QStringLiteral("format"));
    table.addColumn(QStringLiteral("sign/exp/mant"), Align::Right);
    table.addColumn(QStringLiteral("bias"), Align::Right);
    table.addColumn(QStringLiteral("max"), Align::Right);
    table.addColumn(QStringLiteral("min normal"), Align::Right);
    table.addColumn(QStringLiteral("min subnormal"), Align::Right);
    table.addColumn(QStringLiteral("specials"));
    for (const MiniFloatFormat& f : miniFloatFormats()) {
        table.addRow({latin1(enumKey(f.id)), latin1(enumEntry(f.id).displayName),
                      QStringLiteral("%1/%2/%3").arg(f.signBits).arg(f.exponentBits).arg(f.mantissaBits),
                      QString::number(f.bias), formatPowerOfTwo(f.maxFinite()), formatPowerOfTwo(f.minNormal()),
                      f.hasSubnormals() ? formatPowerOfTwo(f.minSubnormal()) : QStringLiteral("-"),
                      latin1(miniFloatSpecialsText(f.id))});
    }
    table.print(stdout);
    std::printf("\nE8M0 has no zero: its min normal is its smallest value. Every format is read and written "
                "bit-exactly, subnormals included (docs/formats.md).\n\n");
    TextTable scaled;
    scaled.addColumn(QStringLiteral("quantize --format"));
    scaled.addColumn(QStringLiteral("scaling"));
    for (const NamedQuantFormat& named : namedQuantFormats()) {
        if (named.format.scheme != ScalingScheme::None)
            scaled.addRow({latin1(named.name), QString::fromStdString(describeQuantFormat(named.format))});
    }
    scaled.print(stdout);
    return kExitOk;
}

} // namespace mantissa::cli
