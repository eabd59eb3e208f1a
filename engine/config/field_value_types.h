#pragma once
// How the config tables handle each C++ type a field can have (integers, floats, booleans,
// strings, lists of integers, enums with a table, an optional activation): one FieldValueType per
// type, and row<Members...>() which points a table row at its member. Used by the two tables
// (run_config_fields.cpp, layer_spec_fields.cpp) and by config_field.cpp; nothing else.
#include "engine/config/config_field.h"
#include "engine/precision/precision_policy.h"
#include "engine/util/check.h"
#include "engine/util/enum_table.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace mantissa {

struct FieldValueType {
    FieldKind kind;
    std::string (*text)(const void* value);
    // Parses `text` into `value`; returns "" or what is wrong ("is not an integer").
    std::string (*parse)(void* value, std::string_view text);
    double (*number)(const void* value);    // numeric kinds
    void (*setNumber)(void* value, double); // numeric kinds
    bool (*equal)(const void* a, const void* b);
    std::vector<FieldChoice> (*choices)();
    // Reads `json`; returns "" or what is wrong, in the parser's words.
    std::string (*read)(void* value, const nlohmann::json& json);
    nlohmann::json (*write)(const void* value);
    // The elements of a number or a list of numbers, for the range check.
    std::vector<double> (*elements)(const void* value);
};

namespace field_types {

std::string formatReal(double value); // the shortest text that reads back as the same float
std::string parseInteger(std::string_view text, long long& value);
std::string parseReal(std::string_view text, double& value);
std::string wrongType(const nlohmann::json& json); // "has the wrong type (string)"

template <typename T>
struct Traits;

template <typename T>
requires std::is_integral_v<T> &&(!std::is_same_v<T, bool>)struct Traits<T> {
    static constexpr FieldKind kind = FieldKind::Integer;
    static std::string text(const T& v) { return std::to_string(v); }
    static std::string parse(T& v, std::string_view text)
    {
        long long parsed = 0;
        if (std::string error = parseInteger(text, parsed); !error.empty())
            return error;
        if constexpr (std::is_unsigned_v<T>)
            if (parsed < 0)
                return "is negative";
        v = static_cast<T>(parsed);
        return {};
    }
    static double number(const T& v) { return static_cast<double>(v); }
    static void setNumber(T& v, double n) { v = static_cast<T>(n); }
    static std::vector<FieldChoice> choices() { return {}; }
};

template <>
struct Traits<float> {
    static constexpr FieldKind kind = FieldKind::Real;
    static std::string text(const float& v) { return formatReal(v); }
    static std::string parse(float& v, std::string_view text)
    {
        double parsed = 0;
        std::string error = parseReal(text, parsed);
        if (error.empty())
            v = static_cast<float>(parsed);
        return error;
    }
    static double number(const float& v) { return v; }
    static void setNumber(float& v, double n) { v = static_cast<float>(n); }
    static std::vector<FieldChoice> choices() { return {}; }
};

template <>
struct Traits<bool> {
    static constexpr FieldKind kind = FieldKind::Boolean;
    static std::string text(const bool& v) { return v ? "true" : "false"; }
    static std::string parse(bool& v, std::string_view text)
    {
        if (text != "true" && text != "false")
            return "must be true or false";
        v = text == "true";
        return {};
    }
    static double number(const bool& v) { return v ? 1 : 0; }
    static void setNumber(bool& v, double n) { v = n != 0; }
    static std::vector<FieldChoice> choices() { return {}; }
};

template <>
struct Traits<std::string> {
    static constexpr FieldKind kind = FieldKind::Text;
    static std::string text(const std::string& v) { return v; }
    static std::string parse(std::string& v, std::string_view text)
    {
        v = std::string(text);
        return {};
    }
    static double number(const std::string&) { return 0; }
    static void setNumber(std::string&, double) {}
    static std::vector<FieldChoice> choices() { return {}; }
};

// "1, 28, 28": a shape or a list of epochs.
template <typename I>
struct Traits<std::vector<I>> {
    static constexpr FieldKind kind = FieldKind::IntegerList;
    static std::string text(const std::vector<I>& v)
    {
        std::string out;
        for (std::size_t i = 0; i < v.size(); ++i)
            out += (i ? ", " : "") + std::to_string(v[i]);
        return out;
    }
    static std::string parse(std::vector<I>& v, std::string_view text)
    {
        // Commas and spaces separate the elements; "1x28x28" is a shape written as one word,
        // so an "x" separates only digits ("3,x,32" is refused, not read as [3, 32]).
        std::vector<I> parsed;
        std::size_t begin = 0;
        while (begin <= text.size()) {
            const std::size_t end = std::min(text.find_first_of(", ", begin), text.size());
            std::string_view word = text.substr(begin, end - begin);
            while (!word.empty()) {
                const std::size_t x = std::min(word.find('x'), word.size());
                long long element = 0;
                if (std::string error = parseInteger(word.substr(0, x), element); !error.empty())
                    return "is not a list of integers such as \"1, 28, 28\"";
                parsed.push_back(static_cast<I>(element));
                if (x + 1 == word.size())
                    return "is not a list of integers such as \"1, 28, 28\"";
                word.remove_prefix(std::min(x + 1, word.size()));
            }
            begin = end + 1;
        }
        v = std::move(parsed);
        return {};
    }
    static double number(const std::vector<I>&) { return 0; }
    static void setNumber(std::vector<I>&, double) {}
    static std::vector<FieldChoice> choices() { return {}; }
};

template <typename E>
requires std::is_enum_v<E>
struct Traits<E> {
    static constexpr FieldKind kind = FieldKind::Choice;
    static std::string text(const E& v) { return std::string(enumKey(v)); }
    static std::string parse(E& v, std::string_view text)
    {
        const auto value = parseEnum<E>(text);
        if (!value)
            return "is \"" + std::string(text) + "\"; expected " + enumKeyList<E>();
        v = *value;
        return {};
    }
    static double number(const E&) { return 0; }
    static void setNumber(E&, double) {}
    static std::vector<FieldChoice> choices()
    {
        std::vector<FieldChoice> out;
        for (const EnumEntry<E>& e : enumEntries<E>())
            out.push_back({e.key, e.displayName, e.description});
        return out;
    }
};

// An optional choice (a layer's fused activation): "none" and no key both mean none.
template <typename E>
struct Traits<std::optional<E>> {
    static constexpr FieldKind kind = FieldKind::Choice;
    static std::string text(const std::optional<E>& v) { return v ? std::string(enumKey(*v)) : "none"; }
    static std::string parse(std::optional<E>& v, std::string_view text)
    {
        if (text.empty() || text == "none") {
            v.reset();
            return {};
        }
        const auto value = parseEnum<E>(text);
        if (!value)
            return "is \"" + std::string(text) + "\"; expected none, " + enumKeyList<E>();
        v = *value;
        return {};
    }
    static double number(const std::optional<E>&) { return 0; }
    static void setNumber(std::optional<E>&, double) {}
    static std::vector<FieldChoice> choices()
    {
        std::vector<FieldChoice> out{{"none", "none", "No activation."}};
        for (const FieldChoice& c : Traits<E>::choices())
            out.push_back(c);
        return out;
    }
};

// A layer's format (precision_policy.h): a choice of one format for every role, or per role,
// written {"inputs": F, "weights": F, "gradients": F} in JSON and "inputs=F, weights=F" as text.
template <>
struct Traits<LayerFormat> {
    static constexpr FieldKind kind = FieldKind::Choice;
    static std::string text(const LayerFormat& v) { return layerFormatText(v); }
    static std::string parse(LayerFormat& v, std::string_view text) { return parseLayerFormat(text, v); }
    static double number(const LayerFormat&) { return 0; }
    static void setNumber(LayerFormat&, double) {}
    static std::vector<FieldChoice> choices() { return Traits<LayerPrecision>::choices(); }
    static std::string readJson(LayerFormat& v, const nlohmann::json& json);
    static nlohmann::json writeJson(const LayerFormat& v);
};

// model.precision_overrides: {"name or pattern": format, ...}; as text "name: F; name: F".
template <>
struct Traits<PrecisionOverrides> {
    static constexpr FieldKind kind = FieldKind::Text;
    static std::string text(const PrecisionOverrides& v);
    static std::string parse(PrecisionOverrides& v, std::string_view text);
    static double number(const PrecisionOverrides&) { return 0; }
    static void setNumber(PrecisionOverrides&, double) {}
    static std::vector<FieldChoice> choices() { return {}; }
    static std::string readJson(PrecisionOverrides& v, const nlohmann::json& json);
    static nlohmann::json writeJson(const PrecisionOverrides& v);
};

template <typename T>
std::string readJson(T& value, const nlohmann::json& json)
{
    if constexpr (requires { Traits<T>::readJson(value, json); }) {
        return Traits<T>::readJson(value, json);
    } else if constexpr (Traits<T>::kind == FieldKind::Choice) {
        // A choice is its key, a string; a number or an object is a type error, not a bad key.
        if (!json.is_string())
            return wrongType(json);
        return Traits<T>::parse(value, json.get<std::string>());
    } else {
        try {
            value = json.get<T>();
        } catch (const nlohmann::json::exception&) {
            return wrongType(json);
        }
        return {};
    }
}

template <typename T>
nlohmann::json writeJson(const T& value)
{
    if constexpr (requires { Traits<T>::writeJson(value); })
        return Traits<T>::writeJson(value);
    else if constexpr (Traits<T>::kind == FieldKind::Choice)
        return Traits<T>::text(value);
    else
        return value;
}

template <typename T>
std::vector<double> elements(const T& value)
{
    if constexpr (Traits<T>::kind == FieldKind::Integer || Traits<T>::kind == FieldKind::Real)
        return {static_cast<double>(value)};
    else if constexpr (Traits<T>::kind == FieldKind::IntegerList)
        return {value.begin(), value.end()};
    else
        return {};
}

template <typename T>
const FieldValueType kValueType{
    Traits<T>::kind,
    [](const void* v) { return Traits<T>::text(*static_cast<const T*>(v)); },
    [](void* v, std::string_view text) { return Traits<T>::parse(*static_cast<T*>(v), text); },
    [](const void* v) { return Traits<T>::number(*static_cast<const T*>(v)); },
    [](void* v, double n) { Traits<T>::setNumber(*static_cast<T*>(v), n); },
    [](const void* a, const void* b) { return *static_cast<const T*>(a) == *static_cast<const T*>(b); },
    &Traits<T>::choices,
    [](void* v, const nlohmann::json& json) { return readJson(*static_cast<T*>(v), json); },
    [](const void* v) { return writeJson(*static_cast<const T*>(v)); },
    [](const void* v) { return elements(*static_cast<const T*>(v)); },
};

} // namespace field_types

// Reads a field from its JSON value; throws ConfigError "`where` has the wrong type (string)".
template <typename Owner>
void readJsonField(const ConfigField<Owner>& field, Owner& owner, const nlohmann::json& value, const std::string& where)
{
    if (std::string error = field.type->read(field.member(owner), value); !error.empty())
        throw ConfigError(where + " " + error);
}

template <typename Owner>
nlohmann::json jsonOfField(const ConfigField<Owner>& field, const Owner& owner)
{
    return field.type->write(field.member(const_cast<Owner&>(owner)));
}

template <typename Pointer>
struct MemberOwner;
template <typename Owner, typename Value>
struct MemberOwner<Value Owner::*> {
    using type = Owner;
};

// A table row pointed at its member: row<&RunConfig::training, &TrainingSpec::batchSize>({...})
// reaches config.training.batchSize; the member's type picks how it is read, written and edited.
template <auto First, auto... Rest>
ConfigField<typename MemberOwner<decltype(First)>::type>
row(ConfigField<typename MemberOwner<decltype(First)>::type> field)
{
    using Owner = typename MemberOwner<decltype(First)>::type;
    using Value = std::remove_cvref_t<decltype(((std::declval<Owner&>().*First).*....*Rest))>;
    field.type = &field_types::kValueType<Value>;
    field.member = [](Owner& owner) -> void* { return &((owner.*First).*....*Rest); };
    return field;
}

} // namespace mantissa
