#include "engine/config/config_field.h"

#include "engine/config/field_value_types.h"
#include "engine/config/run_config.h"
#include "engine/util/format_number.h"

#include <array>
#include <cmath>
#include <cstdlib>

namespace mantissa {

namespace field_types {

std::string formatReal(double value)
{
    // A float field's shortest decimal that reads back as the same float: 0.05f is "0.05",
    // not the double 0.0500000007 it widens to.
    std::array<char, 32> buffer{};
    const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), static_cast<float>(value));
    return std::string(buffer.data(), result.ptr);
}

std::string parseInteger(std::string_view text, long long& value)
{
    const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || result.ec != std::errc() || result.ptr != text.data() + text.size())
        return "is not an integer";
    return {};
}

std::string parseReal(std::string_view text, double& value)
{
    const std::string copy(text);
    char* end = nullptr;
    value = std::strtod(copy.c_str(), &end);
    if (copy.empty() || end != copy.c_str() + copy.size() || !std::isfinite(value))
        return "is not a number";
    return {};
}

std::string wrongType(const nlohmann::json& json)
{
    return std::string("has the wrong type (") + json.type_name() + ")";
}

} // namespace field_types

namespace {

template <typename Owner>
const void* memberOf(const ConfigField<Owner>& field, const Owner& owner)
{
    // The accessor takes a mutable owner so that one pointer serves reads and writes.
    return field.member(const_cast<Owner&>(owner));
}

template <typename Owner>
const Owner& defaults()
{
    static const Owner owner{};
    return owner;
}

// A range's ends as people write them: 2^24 for a large power of two, 65536 and 1000000000 in
// full, 1e-12 and 0.9999 as they are.
std::string numberText(double value)
{
    if (std::abs(value) >= 1e6)
        if (const auto k = exactPowerOfTwo(value))
            return "2^" + std::to_string(*k);
    if (value == std::floor(value) && std::abs(value) < 1e15)
        return std::to_string(static_cast<long long>(value));
    return formatNumber(value);
}

} // namespace

template <typename Owner>
FieldKind ConfigField<Owner>::kind() const
{
    return type->kind;
}

template <typename Owner>
bool ConfigField<Owner>::hasRange() const
{
    return (kind() == FieldKind::Integer || kind() == FieldKind::Real || kind() == FieldKind::IntegerList) &&
           minimum < maximum;
}

template <typename Owner>
std::string ConfigField<Owner>::text(const Owner& owner) const
{
    return type->text(memberOf(*this, owner));
}

template <typename Owner>
std::string ConfigField<Owner>::defaultText() const
{
    return text(defaults<Owner>());
}

template <typename Owner>
bool ConfigField<Owner>::isDefault(const Owner& owner) const
{
    return type->equal(memberOf(*this, owner), memberOf(*this, defaults<Owner>()));
}

template <typename Owner>
bool ConfigField<Owner>::isWritten(const Owner& owner) const
{
    if (applies && !applies(owner))
        return false;
    return write == WriteRule::Always || !isDefault(owner);
}

template <typename Owner>
double ConfigField<Owner>::number(const Owner& owner) const
{
    return type->number(memberOf(*this, owner));
}

template <typename Owner>
void ConfigField<Owner>::setNumber(Owner& owner, double value) const
{
    type->setNumber(member(owner), value);
}

template <typename Owner>
std::vector<FieldChoice> ConfigField<Owner>::choices() const
{
    return type->choices();
}

template <typename Owner>
std::string ConfigField<Owner>::choiceKeys(std::string_view quote) const
{
    std::string keys;
    for (const FieldChoice& choice : choices())
        keys.append(keys.empty() ? "" : ", ").append(quote).append(choice.key).append(quote);
    return keys;
}

template <typename Owner>
std::string ConfigField<Owner>::rangeText() const
{
    if (!hasRange())
        return {};
    std::string text = numberText(minimum);
    text.append(" to ").append(numberText(maximum));
    if (!unit.empty())
        text.append(" ").append(unit);
    return text;
}

template <typename Owner>
void ConfigField<Owner>::setText(Owner& owner, std::string_view text, const std::string& where) const
{
    Owner edited = owner;
    if (std::string error = type->parse(member(edited), text); !error.empty())
        throw ConfigError(where + " " +
                          (error.starts_with("is \"") ? error : "is \"" + std::string(text) + "\": " + error));
    if (std::string error = problem(edited); !error.empty())
        throw ConfigError(where + " " + error);
    owner = std::move(edited);
}

template <typename Owner>
std::string ConfigField<Owner>::problem(const Owner& owner) const
{
    if (!hasRange())
        return {};
    // Real fields are floats: a bound such as 1e30 is compared as the float it rounds to, so
    // that the value a user typed as the bound itself is legal.
    const bool real = kind() == FieldKind::Real;
    const double low = real ? static_cast<float>(minimum) : minimum;
    const double high = real ? static_cast<float>(maximum) : maximum;
    for (double element : type->elements(memberOf(*this, owner)))
        if (!(element >= low && element <= high))
            return "must be " + rangeText() + " (got " + formatNumber(element) + ")";
    return {};
}

template struct ConfigField<RunConfig>;
template struct ConfigField<LayerSpec>;

} // namespace mantissa
