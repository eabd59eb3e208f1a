#include "engine/config/config_docs.h"

#include "engine/config/config_field.h"
#include "engine/config/run_config.h"

#include <map>
#include <vector>

namespace mantissa {

namespace {

std::string code(std::string_view text)
{
    std::string quoted;
    quoted.reserve(text.size() + 2);
    return quoted.append("`").append(text).append("`");
}

// A table cell: Markdown tables end a cell at "|".
std::string cell(std::string text)
{
    for (std::size_t at = text.find('|'); at != std::string::npos; at = text.find('|', at + 2))
        text.replace(at, 1, "\\|");
    return text;
}

template <typename Owner>
std::string legalValues(const ConfigField<Owner>& field)
{
    switch (field.kind()) {
    case FieldKind::Integer:
    case FieldKind::Real: return field.rangeText();
    case FieldKind::IntegerList: return "a list, each " + field.rangeText();
    case FieldKind::Boolean: return "`true`, `false`";
    case FieldKind::Text: return "text";
    case FieldKind::Choice: return field.choiceKeys("`");
    }
    return {};
}

template <typename Owner>
std::string defaultCell(const ConfigField<Owner>& field)
{
    const std::string text = field.defaultText();
    if (field.kind() == FieldKind::IntegerList)
        return code("[" + text + "]");
    return field.kind() == FieldKind::Text ? code("\"" + text + "\"") : code(text);
}

std::string section(std::string_view path)
{
    const std::size_t dot = path.rfind('.');
    return dot == std::string_view::npos ? std::string() : std::string(path.substr(0, dot));
}

} // namespace

std::string configFieldsMarkdown()
{
    std::string out = std::string(kConfigDocsBegin) + "\n";
    std::string current = "(none)";
    for (const RunField& field : runConfigFields()) {
        if (section(field.path) != current) {
            current = section(field.path);
            out += "\n### " + (current.empty() ? std::string("Top level") : code(current)) + "\n";
            out += "| field | default | legal values | meaning |\n| --- | --- | --- | --- |\n";
        }
        out += "| " + code(field.path) + " | " + defaultCell(field) + " | " + cell(legalValues(field)) + " | " +
               cell(std::string(field.description)) + " |\n";
    }

    out += "\n### Layer fields (`model.layers[]`)\n";
    out += "Every layer has a `type`; a `residual` also has its `layers`.\n\n";
    out += "| field | taken by | default | legal values | meaning |\n| --- | --- | --- | --- | --- |\n";
    for (const LayerSpecField& field : layerSpecFields()) {
        std::string kinds;
        const auto kind = parseLayerField(field.path);
        for (const EnumEntry<LayerKind>& entry : enumEntries<LayerKind>())
            if (!kind || layerTakesField(entry.value, *kind))
                kinds += (kinds.empty() ? "" : ", ") + code(entry.key);
        out += "| " + code(field.path) + " | " + (kind ? kinds : std::string("every layer")) + " | " +
               defaultCell(field) + " | " + cell(legalValues(field)) + " | " + cell(std::string(field.description)) +
               " |\n";
    }

    out += "\n### Layer types (`model.layers[].type`)\n";
    out += "| type | fields | meaning |\n| --- | --- | --- |\n";
    for (const EnumEntry<LayerKind>& entry : enumEntries<LayerKind>()) {
        std::string fields;
        for (LayerField field : layerFields(entry.value))
            fields += (fields.empty() ? "" : ", ") + code(layerSpecField(field).path);
        out += "| " + code(entry.key) + " | " + (fields.empty() ? std::string("none") : fields) + " | " +
               cell(std::string(entry.description)) + " |\n";
    }
    return out + kConfigDocsEnd + "\n";
}

} // namespace mantissa
