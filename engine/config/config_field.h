#pragma once
// One row per config field, as engine/util/enum_table.h is one row per enum value: the JSON path,
// the member it lives in, its default (the member's initialiser), its legal range or values, its
// unit and a one-line description. The parser, the writer, validateRunConfig, the CLI's options,
// the UI's forms and layer editor, the one-line summaries and docs/config.md's field tables all
// read the rows, so a new field is one row (run_config_fields.cpp or layer_spec_fields.cpp) plus
// the code that uses it.
//
// Two tables: the run's fields (Owner = RunConfig, paths such as "training.batch_size") and a
// layer's fields (Owner = LayerSpec, keys such as "units"; layer_kind.h says which kinds take
// which).
#include "engine/config/layer_kind.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mantissa {

struct RunConfig;
struct LayerSpec;

// What a field holds, which decides how it is edited and parsed from text.
enum class FieldKind : std::uint8_t { Integer, Real, Boolean, Text, Choice, IntegerList };

// One legal value of a Choice field (a copy of its enum table's entry).
struct FieldChoice {
    std::string_view key, displayName, description;
};

// How values of one C++ type are read, written, shown and parsed: one instance per type, in
// field_value_types.h. Fields point at it; nothing outside the tables uses it directly.
struct FieldValueType;

// When the writer puts a field into the JSON: always (so that a config shows every setting), or
// only away from its default (fields added after runs were stored, which must be written again
// byte for byte, and layer fields that would clutter every layer).
enum class WriteRule : std::uint8_t { Always, UnlessDefault };

template <typename Owner>
struct ConfigField {
    std::string_view path{};         // "training.batch_size"; a layer's "units"
    std::string_view label{};        // "Batch size": the UI's label
    std::string_view unit{};         // "steps", "samples", ...; "" for none
    std::string_view description{};  // one line: tooltips, --help, docs/config.md
    double minimum = 0, maximum = 0; // Integer, Real, IntegerList (each element): the legal range
    std::string_view option{};       // the CLI's --option that sets it; "" for none
    WriteRule write = WriteRule::Always;
    // Whether one-line summaries (the layer table's cell, `show`, reports) name the field at its
    // default: a layer's defining fields always, its options only when changed.
    WriteRule shown = WriteRule::Always;
    // Beyond `write`: whether the field belongs in this owner's JSON at all (a text run's
    // context, a layer kind's fields); nullptr for always.
    bool (*applies)(const Owner&) = nullptr;
    const FieldValueType* type = nullptr;
    void* (*member)(Owner&) = nullptr; // the member the field lives in

    FieldKind kind() const;
    bool hasRange() const;
    std::string text(const Owner& owner) const;       // "128", "mixed-bf16", "1, 28, 28"
    std::string defaultText() const;                  // the text of a default-constructed Owner
    bool isDefault(const Owner& owner) const;         // the value equals the default's
    bool isWritten(const Owner& owner) const;         // the writer puts it into the JSON
    double number(const Owner& owner) const;          // Integer, Real, Boolean (0 or 1)
    void setNumber(Owner& owner, double value) const; // Integer, Real, Boolean
    std::vector<FieldChoice> choices() const;         // Choice: its legal values in order
    // Choice: its keys in order, "fp32, mixed-fp16, ...", each between `quote`s ("`fp32`").
    std::string choiceKeys(std::string_view quote = {}) const;
    std::string rangeText() const; // "1 to 65536 samples"
    // Sets the field from text (a command-line value, a table cell), checking its type and its
    // range: throws ConfigError "`where` <what is wrong>", where names the option or the cell.
    void setText(Owner& owner, std::string_view text, const std::string& where) const;
    // "" when the value is legal, else what is wrong: "must be 1 to 65536 samples (got 0)".
    std::string problem(const Owner& owner) const;
};

using RunField = ConfigField<RunConfig>;
using LayerSpecField = ConfigField<LayerSpec>;

// The run's fields, in the order docs/config.md and the CLI's help list them.
std::span<const RunField> runConfigFields();
const RunField* findRunConfigField(std::string_view path);
// The field at `path`; a path missing from the table is a broken invariant (a UI binding).
const RunField& runConfigField(std::string_view path);

// A layer's fields: one per LayerField (layer_kind.h) plus "precision", which every kind takes.
std::span<const LayerSpecField> layerSpecFields();
const LayerSpecField* findLayerSpecField(std::string_view key);
const LayerSpecField& layerSpecField(LayerField field);
// The LayerField whose key is `key` ("units"); nothing for "precision" or an unknown key.
std::optional<LayerField> parseLayerField(std::string_view key);

// "units=128, activation=relu": the fields of the layer's kind that its summary shows, then
// "2 layers" for a residual block. The one text of a layer's settings in every front end.
std::string layerParamsText(const LayerSpec& layer);
// "linear units=128, activation=relu [fp32]": the layer's kind, its settings and its own precision.
std::string layerSummary(const LayerSpec& layer);

} // namespace mantissa
