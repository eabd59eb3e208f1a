// Sweep spec parsing and expansion. Values are set into the base config's JSON by path and
// every expanded config goes through parseRunConfig: the config parser is strict (an unknown
// field is an error naming it), so a misspelt axis key or a bad value is refused by the same
// code that refuses it in a config file, with the run it belongs to named in front.
#include "engine/sweep/sweep_spec.h"

#include "engine/config/presets.h"
#include "engine/util/check.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace mantissa {

using nlohmann::json;

namespace {

// One step of a key path: an object member or an array element.
struct PathStep {
    std::string member; // empty for an array element
    std::size_t index = 0;
};

std::vector<PathStep> parsePath(const std::string& path, const std::string& where)
{
    std::vector<PathStep> steps;
    std::size_t i = 0;
    const auto bad = [&](const std::string& why) {
        throw ConfigError(where + ": key \"" + path + "\" " + why +
                          "; write a path such as \"optimizer.lr\" or \"model.layers[1].units\"");
    };
    while (i < path.size()) {
        std::size_t end = i;
        while (end < path.size() && path[end] != '.' && path[end] != '[')
            ++end;
        if (end == i)
            bad("has an empty member name");
        steps.push_back({path.substr(i, end - i), 0});
        i = end;
        while (i < path.size() && path[i] == '[') {
            const std::size_t close = path.find(']', i);
            if (close == std::string::npos || close == i + 1)
                bad("has an unclosed or empty [index]");
            const std::string digits = path.substr(i + 1, close - i - 1);
            if (digits.find_first_not_of("0123456789") != std::string::npos)
                bad("has a non-numeric index [" + digits + "]");
            steps.push_back({"", std::stoul(digits)});
            i = close + 1;
        }
        if (i < path.size()) {
            if (path[i] != '.' || i + 1 == path.size())
                bad("is not a path");
            ++i;
        }
    }
    if (steps.empty())
        bad("is empty");
    return steps;
}

// "[3]". Built by appending: GCC 12 warns (-Wrestrict, a false positive) on "[" + std::string.
std::string indexText(std::size_t index)
{
    std::string text(1, '[');
    text.append(std::to_string(index)).push_back(']');
    return text;
}

// Sets `value` at `path` in `config`. A missing object member is created (the config parser
// then reports it if it is not a known field); an array element must exist.
void setAtPath(json& config, const std::string& path, const json& value, const std::string& where)
{
    json* node = &config;
    std::string walked;
    for (const PathStep& step : parsePath(path, where)) {
        if (step.member.empty()) {
            if (!node->is_array() || step.index >= node->size())
                throw ConfigError(
                    where + ": " + walked + indexText(step.index) + " does not exist (" + walked + " has " +
                    (node->is_array() ? std::to_string(node->size()) + " elements" : "no elements") + ")");
            node = &(*node)[step.index];
            walked += indexText(step.index);
        } else {
            // A member created by an earlier step (precision.recipe of a run without a recipe,
            // whose written config leaves the object out) becomes the object it names.
            if (node->is_null() && !walked.empty())
                *node = json::object();
            if (!node->is_object())
                throw ConfigError(where + ": " + walked + " is not an object, so it has no member \"" + step.member +
                                  "\"");
            node = &(*node)[step.member];
            walked += (walked.empty() ? "" : ".") + step.member;
        }
    }
    *node = value;
}

json parseJson(const std::string& text, const std::string& origin)
{
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        throw ConfigError(origin + ": not valid JSON: " + e.what());
    }
}

std::string readFile(const std::string& path, const std::string& what)
{
    std::ifstream in(path);
    if (!in)
        throw ConfigError(path + ": cannot open the " + what + " (does it exist and is it readable?)");
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// The base config as JSON text and where it came from (for error messages).
std::pair<std::string, std::string> baseConfigText(const json& base, const std::string& origin,
                                                   const std::string& baseDirectory)
{
    if (base.is_string())
        return {presetJson(base.get<std::string>()), "preset " + base.get<std::string>()};
    if (!base.is_object() || base.size() != 1)
        throw ConfigError(origin + ": base must be a preset name or one of {\"preset\": NAME}, {\"file\": PATH}, "
                                   "{\"config\": {...}}");
    const auto& [kind, value] = *base.items().begin();
    if (kind == "preset" && value.is_string())
        return {presetJson(value.get<std::string>()), "preset " + value.get<std::string>()};
    if (kind == "file" && value.is_string()) {
        std::filesystem::path file(value.get<std::string>());
        if (file.is_relative() && !baseDirectory.empty())
            file = std::filesystem::path(baseDirectory) / file;
        return {readFile(file.string(), "base config file"), file.string()};
    }
    if (kind == "config" && value.is_object())
        return {value.dump(), origin + " base.config"};
    throw ConfigError(origin + ": base." + kind + " is not one of preset (a name), file (a path), config (an object)");
}

std::vector<std::string> valueList(const json& values, const std::string& where)
{
    if (!values.is_array() || values.empty())
        throw ConfigError(where + " must be a non-empty array of values");
    std::vector<std::string> texts;
    std::set<std::string> seen;
    for (const json& value : values) {
        const std::string text = value.dump();
        if (!seen.insert(text).second)
            throw ConfigError(where + " lists " + text + " twice");
        texts.push_back(text);
    }
    return texts;
}

// "dynamic" -> {"type": "dynamic"}, 128 -> {"type": "static", "value": 128}; objects as given.
json lossScaleValue(const json& value)
{
    if (value.is_string())
        return {{"type", value}};
    if (value.is_number())
        return {{"type", "static"}, {"value", value}};
    return value;
}

std::vector<std::uint64_t> parseSeeds(const json& seeds, const std::string& origin)
{
    std::vector<std::uint64_t> list;
    if (seeds.is_number_integer()) {
        const std::int64_t count = seeds.get<std::int64_t>();
        if (count < 1)
            throw ConfigError(origin + ": seeds is " + std::to_string(count) +
                              "; a sweep needs at least one seed (seeds: N runs seeds 0 to N-1)");
        for (std::int64_t seed = 0; seed < count; ++seed)
            list.push_back(static_cast<std::uint64_t>(seed));
        return list;
    }
    if (!seeds.is_array())
        throw ConfigError(origin + ": seeds must be a count (8) or a list of seeds ([0, 1, 2])");
    if (seeds.empty())
        throw ConfigError(origin + ": seeds is an empty list; a sweep needs at least one seed");
    std::set<std::uint64_t> seen;
    for (const json& seed : seeds) {
        if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<std::int64_t>() >= 0))
            throw ConfigError(origin + ": seeds lists " + seed.dump() + "; seeds are integers >= 0");
        if (!seen.insert(seed.get<std::uint64_t>()).second)
            throw ConfigError(origin + ": seeds lists " + seed.dump() + " twice");
        list.push_back(seed.get<std::uint64_t>());
    }
    return list;
}

std::vector<SweepArm> parseArms(const json& arms, const std::string& origin)
{
    if (!arms.is_array() || arms.empty())
        throw ConfigError(origin + ": arms must be a non-empty array of {\"name\": NAME, \"set\": {PATH: value}}");
    std::vector<SweepArm> list;
    std::set<std::string> names;
    for (std::size_t i = 0; i < arms.size(); ++i) {
        const json& arm = arms[i];
        const std::string where = origin + ": arms[" + std::to_string(i) + "]";
        if (!arm.is_object() || !arm.contains("name") || !arm["name"].is_string() ||
            arm["name"].get<std::string>().empty())
            throw ConfigError(where + " must be {\"name\": NAME, \"set\": {PATH: value}} with a non-empty name");
        for (const auto& [key, value] : arm.items())
            if (key != "name" && key != "set")
                throw ConfigError(where + ": " + key + " is not a known field of an arm (name, set)");
        SweepArm parsed{arm["name"].get<std::string>(), {}};
        if (!names.insert(parsed.name).second)
            throw ConfigError(where + ": two arms are named \"" + parsed.name + "\"");
        if (arm.contains("set")) {
            if (!arm["set"].is_object())
                throw ConfigError(where + ".set must be an object of {\"config.key\": value}");
            for (const auto& [key, value] : arm["set"].items()) {
                if (key == "training.seed")
                    throw ConfigError(where + ".set: training.seed is swept by \"seeds\", not set by an arm");
                parsed.settings.emplace_back(key, value.dump());
            }
        }
        list.push_back(std::move(parsed));
    }
    return list;
}

std::string lastMember(const std::string& key)
{
    const std::size_t dot = key.rfind('.');
    return dot == std::string::npos ? key : key.substr(dot + 1);
}

} // namespace

std::size_t SweepSpec::configurationCount() const
{
    std::size_t count = arms.empty() ? 1 : arms.size();
    for (const SweepAxis& axis : axes)
        count *= axis.values.size();
    return count;
}

std::string sweepValueText(const std::string& jsonValue)
{
    const json value = json::parse(jsonValue);
    if (value.is_string())
        return value.get<std::string>();
    if (value.is_object() && value.contains("type") && value["type"].is_string()) {
        const std::string type = value["type"].get<std::string>();
        if (type == "static" && value.contains("value"))
            return "static " + value["value"].dump();
        if (value.size() == 1)
            return type;
    }
    return value.dump();
}

SweepSpec parseSweepSpec(const std::string& text, const std::string& origin, const std::string& baseDirectory)
{
    const json root = parseJson(text, origin);
    if (!root.is_object())
        throw ConfigError(origin + ": a sweep spec is a JSON object");
    static const std::set<std::string> kFields = {"name",           "base",        "set",  "precisions", "loss_scales",
                                                  "learning_rates", "batch_sizes", "axes", "arms",       "seeds"};
    for (const auto& [key, value] : root.items()) {
        if (!kFields.contains(key))
            throw ConfigError(origin + ": " + key +
                              " is not a known field of a sweep spec (name, base, set, precisions, loss_scales, "
                              "learning_rates, batch_sizes, axes, arms, seeds)");
    }
    if (!root.contains("base"))
        throw ConfigError(origin + ": base is missing: name a preset (\"base\": \"mlp\") or a config");

    const auto [baseText, baseOrigin] = baseConfigText(root["base"], origin, baseDirectory);
    json base = json::parse(runConfigToJson(parseRunConfig(baseText, baseOrigin)));
    if (root.contains("set")) {
        if (!root["set"].is_object())
            throw ConfigError(origin + ": set must be an object of {\"config.key\": value}");
        for (const auto& [key, value] : root["set"].items())
            setAtPath(base, key, value, origin + ": set");
    }
    SweepSpec spec;
    // Parsed once more so that "set" is checked (its key known, its value valid) before any run.
    spec.baseConfigJson = runConfigToJson(parseRunConfig(base.dump(), origin + " (base with set applied)"));
    const RunConfig baseConfig = parseRunConfig(spec.baseConfigJson, origin);
    spec.name = root.value("name", baseConfig.name + " sweep");

    const std::pair<const char*, const char*> kShorthands[] = {{"precisions", "precision.mode"},
                                                               {"loss_scales", "precision.loss_scale"},
                                                               {"learning_rates", "optimizer.lr"},
                                                               {"batch_sizes", "training.batch_size"}};
    for (const auto& [field, key] : kShorthands) {
        if (!root.contains(field))
            continue;
        json values = root[field];
        if (std::string(field) == "loss_scales" && values.is_array())
            for (json& value : values)
                value = lossScaleValue(value);
        spec.axes.push_back({key, valueList(values, origin + ": " + field)});
    }
    if (root.contains("axes")) {
        if (!root["axes"].is_array())
            throw ConfigError(origin + ": axes must be an array of {\"key\": PATH, \"values\": [...]}");
        for (std::size_t i = 0; i < root["axes"].size(); ++i) {
            const json& axis = root["axes"][i];
            const std::string where = origin + ": axes[" + std::to_string(i) + "]";
            if (!axis.is_object() || !axis.contains("key") || !axis["key"].is_string() || !axis.contains("values") ||
                axis.size() != 2)
                throw ConfigError(where + " must be {\"key\": PATH, \"values\": [...]}");
            spec.axes.push_back({axis["key"].get<std::string>(), valueList(axis["values"], where + ".values")});
        }
    }
    if (root.contains("arms"))
        spec.arms = parseArms(root["arms"], origin);
    std::set<std::string> keys;
    for (const SweepAxis& axis : spec.axes) {
        if (axis.key == "training.seed")
            throw ConfigError(origin + ": training.seed is swept by \"seeds\", not by an axis");
        if (!keys.insert(axis.key).second)
            throw ConfigError(origin + ": two axes sweep " + axis.key);
    }
    spec.seeds = root.contains("seeds") ? parseSeeds(root["seeds"], origin)
                                        : std::vector<std::uint64_t>{baseConfig.training.seed};
    return spec;
}

SweepSpec precisionComparisonSpec(const RunConfig& base, const std::vector<PrecisionMode>& modes, int seeds)
{
    const std::string origin = "Compare precisions";
    validateRunConfig(base, origin);
    if (modes.size() < 2)
        throw ConfigError(origin + ": choose at least two precisions to compare");
    SweepSpec spec;
    spec.baseConfigJson = runConfigToJson(base);
    SweepAxis axis{"precision.mode", {}};
    std::string others;
    for (PrecisionMode mode : modes) {
        axis.values.push_back(json(enumKey(mode)).dump());
        if (mode != modes.front())
            others += (others.empty() ? "" : ", ") + std::string(enumKey(mode));
    }
    spec.axes.push_back(std::move(axis));
    spec.seeds = parseSeeds(json(seeds), origin);
    spec.name = base.name + ": " + std::string(enumKey(modes.front())) + " vs " + others + " x " +
                std::to_string(seeds) + " seeds";
    return spec;
}

SweepSpec loadSweepSpecFile(const std::string& path)
{
    const std::filesystem::path file(path);
    return parseSweepSpec(readFile(path, "sweep spec"), path, file.parent_path().string());
}

std::string sweepSpecToJson(const SweepSpec& spec, int indent)
{
    json axes = json::array();
    for (const SweepAxis& axis : spec.axes) {
        json values = json::array();
        for (const std::string& value : axis.values)
            values.push_back(json::parse(value));
        axes.push_back({{"key", axis.key}, {"values", values}});
    }
    json root = {{"name", spec.name},
                 {"base", {{"config", json::parse(spec.baseConfigJson)}}},
                 {"axes", axes},
                 {"seeds", spec.seeds}};
    // Written only when present, so that a spec without arms keeps the text it was stored with.
    if (!spec.arms.empty()) {
        json arms = json::array();
        for (const SweepArm& arm : spec.arms) {
            json settings = json::object();
            for (const auto& [key, value] : arm.settings)
                settings[key] = json::parse(value);
            arms.push_back({{"name", arm.name}, {"set", settings}});
        }
        root["arms"] = arms;
    }
    return root.dump(indent);
}

SweepPlan expandSweep(const SweepSpec& spec, const std::string& origin)
{
    MANTISSA_ASSERT(!spec.seeds.empty());
    const json base = json::parse(spec.baseConfigJson);
    SweepPlan plan;
    const std::size_t configurations = spec.configurationCount();
    const std::size_t total = spec.runCount();
    const std::size_t perArm = configurations / (spec.arms.empty() ? 1 : spec.arms.size());
    for (std::size_t c = 0; c < configurations; ++c) {
        // Mixed radix, the last axis fastest: the order a reader of the spec expects.
        std::vector<std::size_t> choice(spec.axes.size());
        std::size_t rest = c % perArm;
        const SweepArm* arm = spec.arms.empty() ? nullptr : &spec.arms[c / perArm];
        for (std::size_t a = spec.axes.size(); a-- > 0;) {
            choice[a] = rest % spec.axes[a].values.size();
            rest /= spec.axes[a].values.size();
        }
        SweepConfiguration configuration;
        configuration.index = static_cast<int>(c);
        std::string label;
        if (arm) {
            configuration.arm = static_cast<int>(c / perArm);
            configuration.assignments.push_back("arm=" + arm->name);
            label = arm->name;
        }
        for (std::size_t a = 0; a < spec.axes.size(); ++a) {
            const std::string valueText = sweepValueText(spec.axes[a].values[choice[a]]);
            configuration.assignments.push_back(spec.axes[a].key + "=" + valueText);
            label += (label.empty() ? "" : ", ") +
                     (spec.axes.size() == 1 && !arm ? valueText : lastMember(spec.axes[a].key) + "=" + valueText);
        }
        configuration.label = label.empty() ? "base" : label;

        for (std::uint64_t seed : spec.seeds) {
            SweepRun run;
            run.index = static_cast<int>(plan.runs.size());
            run.configuration = configuration.index;
            run.seed = seed;
            for (const std::string& assignment : configuration.assignments)
                run.label += assignment + ", ";
            run.label += "seed=" + std::to_string(seed);
            const std::string where =
                origin + " run " + std::to_string(run.index) + " of " + std::to_string(total) + " (" + run.label + ")";
            json config = base;
            if (arm)
                for (const auto& [key, value] : arm->settings)
                    setAtPath(config, key, json::parse(value), where + ", arm " + arm->name);
            for (std::size_t a = 0; a < spec.axes.size(); ++a)
                setAtPath(config, spec.axes[a].key, json::parse(spec.axes[a].values[choice[a]]), where);
            config["training"]["seed"] = seed;
            run.config = parseRunConfig(config.dump(), where);
            plan.runs.push_back(std::move(run));
        }
        plan.configurations.push_back(std::move(configuration));
    }
    return plan;
}

} // namespace mantissa
