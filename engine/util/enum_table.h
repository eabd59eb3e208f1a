#pragma once
// The legal values of a config field that picks one of a few choices (precision.mode,
// optimizer.type, ...), as one table per enum: the value, its key in JSON and on the command
// line, the name the UI shows and a one-line description. The parser, the CLI's help and error
// texts, the UI's combo boxes and the docs all read the same table, so none can offer or
// accept a value the engine does not know (issue 15: they had drifted apart).
//
// Each enum provides its table by specialising enumEntries<E>() next to its definition:
//     template <> std::span<const EnumEntry<PrecisionMode>> enumEntries<PrecisionMode>();
// An enum without a table does not compile where a table is asked for.
#include "engine/util/check.h"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace mantissa {

template <typename E>
struct EnumEntry {
    E value;
    std::string_view key;         // "mixed-fp16": as written in JSON configs and on the command line
    std::string_view displayName; // "Mixed fp16": as the UI lists it
    std::string_view description; // one line for tooltips, --help and docs/config.md
};

// Every legal value of E in the order the UI and help texts list them.
template <typename E>
std::span<const EnumEntry<E>> enumEntries() = delete;

// The entry of `value`; a value missing from its table is a broken invariant.
template <typename E>
const EnumEntry<E>& enumEntry(E value)
{
    for (const EnumEntry<E>& entry : enumEntries<E>())
        if (entry.value == value)
            return entry;
    assertionFailed("enum value missing from its enumEntries table", __FILE__, __LINE__);
}

template <typename E>
std::string_view enumKey(E value)
{
    return enumEntry(value).key;
}

template <typename E>
std::optional<E> parseEnum(std::string_view key)
{
    for (const EnumEntry<E>& entry : enumEntries<E>())
        if (entry.key == key)
            return entry.value;
    return std::nullopt;
}

// "fp32, fp16, mixed-fp16, mixed-bf16 or bf16": the legal keys, for error and help texts.
template <typename E>
std::string enumKeyList()
{
    const auto entries = enumEntries<E>();
    std::string text;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        if (i > 0)
            text += i + 1 == entries.size() ? " or " : ", ";
        text += entries[i].key;
    }
    return text;
}

// The message for a key that is not legal: `field` is "is \"fp8\"; expected fp32, ... or bf16".
template <typename E>
std::string unknownEnumMessage(const std::string& field, std::string_view key)
{
    return field + " is \"" + std::string(key) + "\"; expected " + enumKeyList<E>();
}

// Parses `key` for the field named `field` (a JSON path or a command-line option), throwing a
// ConfigError that names the field and lists the legal values.
template <typename E>
E parseEnumOrThrow(std::string_view key, const std::string& field)
{
    if (const auto value = parseEnum<E>(key))
        return *value;
    throw ConfigError(unknownEnumMessage<E>(field, key));
}

} // namespace mantissa
