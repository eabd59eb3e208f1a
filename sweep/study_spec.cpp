// Study spec parsing. The trained arms become a sweep spec's "arms" and go through
// parseSweepSpec, so the base, "set" and the arms' settings are refused by the same code that
// refuses them in a sweep; this file adds the study's own fields and the fork arms.
#include "sweep/study_spec.h"

#include "engine/config/config_field.h"
#include "engine/model/model.h"
#include "engine/util/check.h"
#include "sweep/sweep_statistics.h"

#include <QCryptographicHash>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>

namespace mantissa::sweep {

using nlohmann::json;

namespace {

void rejectUnknown(const json& object, const std::set<std::string>& known, const std::string& where,
                   const std::string& what)
{
    std::string list;
    for (const std::string& k : known)
        list += (list.empty() ? "" : ", ") + k;
    for (const auto& [key, value] : object.items())
        if (!known.contains(key))
            throw ConfigError(where + ": " + key + " is not a known field of " + what + " (" + list + ")");
}

std::string requireString(const json& object, const char* key, const std::string& where)
{
    if (!object.contains(key) || !object[key].is_string() || object[key].get<std::string>().empty())
        throw ConfigError(where + ": " + key + " is missing or not a non-empty string");
    return object[key].get<std::string>();
}

bool isStudyMetric(const std::string& key)
{
    const auto& keys = studyMetricKeys();
    return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::string metricList()
{
    std::string list;
    for (const std::string& k : studyMetricKeys())
        list += (list.empty() ? "" : ", ") + k;
    return list;
}

// "fork": {"arm": NAME, "at": 0.8, "set": {...}}
StudyForkArm parseFork(const std::string& name, const json& fork, const std::string& where)
{
    if (!fork.is_object())
        throw ConfigError(where + ".fork must be {\"arm\": NAME, \"at\": FRACTION, \"set\": {PATH: value}}");
    rejectUnknown(fork, {"arm", "at", "set"}, where + ".fork", "a fork");
    StudyForkArm arm;
    arm.name = name;
    arm.parent = requireString(fork, "arm", where + ".fork");
    if (!fork.contains("at") || !fork["at"].is_number() || !(fork["at"].get<double>() > 0) ||
        !(fork["at"].get<double>() < 1))
        throw ConfigError(where + ".fork.at must be a fraction of the parent's steps between 0 and 1 (0.8: at 80%)");
    arm.at = fork["at"].get<double>();
    if (fork.contains("set")) {
        if (!fork["set"].is_object())
            throw ConfigError(where + ".fork.set must be an object of {\"config.key\": value}");
        for (const auto& [key, value] : fork["set"].items())
            arm.settings.emplace_back(key, value.dump());
    }
    if (arm.settings.empty())
        throw ConfigError(where + ".fork.set is empty: a fork that changes nothing repeats its parent");
    return arm;
}

std::string hashOf(const std::string& text)
{
    const QByteArray digest =
        QCryptographicHash::hash(QByteArray::fromStdString(text), QCryptographicHash::Sha256).toHex();
    return digest.left(12).toStdString();
}

} // namespace

const std::vector<std::string>& studyMetricKeys()
{
    static const std::vector<std::string> keys = [] {
        std::vector<std::string> list = everySweepMetricKey(); // a language model's bits per character too
        list.emplace_back(kWeightGradUnderflowMetric);
        return list;
    }();
    return keys;
}

const StudyForkArm* StudySpec::fork(const std::string& arm) const
{
    for (const StudyForkArm& f : forks)
        if (f.name == arm)
            return &f;
    return nullptr;
}

StudySpec parseStudySpec(const std::string& text, const std::string& origin, const std::string& baseDirectory,
                         bool full)
{
    json root;
    try {
        root = json::parse(text);
    } catch (const json::parse_error& e) {
        throw ConfigError(origin + ": not valid JSON: " + e.what());
    }
    if (!root.is_object())
        throw ConfigError(origin + ": a study spec is a JSON object");
    rejectUnknown(root,
                  {"name", "title", "claim", "base", "set", "arms", "seeds", "metrics", "margins", "expect",
                   "differences", "full"},
                  origin, "a study spec");
    StudySpec spec;
    spec.file = origin;
    spec.full = full;
    spec.name = requireString(root, "name", origin);
    spec.title = root.value("title", spec.name);
    if (!root.contains("claim") || !root["claim"].is_object())
        throw ConfigError(origin + ": claim is missing: {\"text\": what the paper claims, \"citation\": where}");
    rejectUnknown(root["claim"], {"text", "citation"}, origin + ": claim", "a claim");
    spec.claim = requireString(root["claim"], "text", origin + ": claim");
    spec.citation = requireString(root["claim"], "citation", origin + ": claim");
    if (root.contains("differences")) {
        if (!root["differences"].is_array())
            throw ConfigError(origin + ": differences must be an array of sentences");
        for (const json& d : root["differences"]) {
            if (!d.is_string())
                throw ConfigError(origin + ": differences lists " + d.dump() + ", not a sentence");
            spec.differences.push_back(d.get<std::string>());
        }
    }

    json set = root.value("set", json::object());
    json seeds = root.value("seeds", json(nullptr));
    if (full) {
        if (!root.contains("full") || !root["full"].is_object())
            throw ConfigError(origin + ": --full asks for the study's \"full\" setting, and it has none");
        rejectUnknown(root["full"], {"set", "seeds"}, origin + ": full", "the full setting");
        if (root["full"].contains("set")) {
            if (!root["full"]["set"].is_object() || !set.is_object())
                throw ConfigError(origin + ": full.set must be an object of {\"config.key\": value}");
            for (const auto& [key, value] : root["full"]["set"].items())
                set[key] = value;
        }
        if (root["full"].contains("seeds"))
            seeds = root["full"]["seeds"];
    } else if (root.contains("full")) {
        if (!root["full"].is_object())
            throw ConfigError(origin + ": full must be {\"set\": {...}, \"seeds\": N}");
        rejectUnknown(root["full"], {"set", "seeds"}, origin + ": full", "the full setting");
    }
    if (seeds.is_null())
        throw ConfigError(origin + ": seeds is missing: a study compares arms over seeds (at least 2)");

    // The arms: trained ones into the sweep, forks aside.
    if (!root.contains("arms") || !root["arms"].is_array() || root["arms"].size() < 2)
        throw ConfigError(origin + ": arms must list at least two arms to compare");
    json trainedArms = json::array();
    std::set<std::string> names;
    for (std::size_t i = 0; i < root["arms"].size(); ++i) {
        const json& arm = root["arms"][i];
        const std::string where = origin + ": arms[" + std::to_string(i) + "]";
        if (!arm.is_object())
            throw ConfigError(where + " must be {\"name\": NAME, \"set\": {...}} or {\"name\": NAME, \"fork\": {...}}");
        rejectUnknown(arm, {"name", "set", "fork"}, where, "an arm");
        const std::string name = requireString(arm, "name", where);
        if (!names.insert(name).second)
            throw ConfigError(where + ": two arms are named \"" + name + "\"");
        spec.armOrder.push_back(name);
        if (arm.contains("fork")) {
            if (arm.contains("set"))
                throw ConfigError(where + " (" + name + ") has both set and fork; a fork's settings go in fork.set");
            spec.forks.push_back(parseFork(name, arm["fork"], where));
        } else {
            trainedArms.push_back(arm);
        }
    }
    if (trainedArms.empty())
        throw ConfigError(origin + ": every arm is a fork; at least one arm must be trained from the start");

    // A fork's parent saves its state at the fork step; the steps follow from its max_steps.
    json probe = {{"name", "study " + spec.name},
                  {"base", root.contains("base") ? root["base"] : json(nullptr)},
                  {"set", set},
                  {"arms", trainedArms},
                  {"seeds", seeds}};
    if (!root.contains("base"))
        throw ConfigError(origin + ": base is missing: name a preset (\"base\": \"mlp\") or a config");
    const SweepSpec probeSpec = parseSweepSpec(probe.dump(), origin, baseDirectory);
    if (probeSpec.seeds.size() < 2)
        throw ConfigError(origin + ": seeds gives " + std::to_string(probeSpec.seeds.size()) +
                          " seed; a study needs at least 2 per arm (5 or more to decide anything)");
    for (StudyForkArm& fork : spec.forks) {
        auto parent = std::find_if(trainedArms.begin(), trainedArms.end(),
                                   [&](const json& a) { return a["name"] == fork.parent; });
        if (parent == trainedArms.end())
            throw ConfigError(
                origin + ": arm " + fork.name + " forks \"" + fork.parent + "\", which is not " +
                (names.contains(fork.parent) ? "trained from the start (a fork of a fork)" : "an arm of this study"));
        // The parent's steps: its own max_steps over the base's.
        const RunConfig base = parseRunConfig(probeSpec.baseConfigJson, origin);
        std::int64_t steps = base.training.maxSteps;
        if (parent->contains("set") && (*parent)["set"].contains("training.max_steps") &&
            (*parent)["set"]["training.max_steps"].is_number_integer())
            steps = (*parent)["set"]["training.max_steps"].get<std::int64_t>();
        if (steps < 2)
            throw ConfigError(origin + ": arm " + fork.name + " forks " + fork.parent + " at " +
                              std::to_string(fork.at) + " of its steps, but " + fork.parent +
                              " has no training.max_steps to take the fraction of; set it");
        fork.step = std::clamp<std::int64_t>(std::llround(fork.at * double(steps)), 1, steps - 1);
        json& parentSet = (*parent)["set"];
        if (!parentSet.is_object())
            parentSet = json::object();
        const std::int64_t every = parentSet.value("training.save_state_every", std::int64_t(0));
        parentSet["training.save_state_every"] = every > 0 ? std::gcd(every, fork.step) : fork.step;
    }
    json sweepJson = probe;
    sweepJson["arms"] = trainedArms;
    if (full)
        sweepJson["name"] = "study " + spec.name + " (full)";
    spec.sweep = parseSweepSpec(sweepJson.dump(), origin, baseDirectory);

    // Metrics, margins and expectations.
    if (!root.contains("metrics") || !root["metrics"].is_array() || root["metrics"].empty())
        throw ConfigError(origin + ": metrics must list the final metrics to compare (" + metricList() + ")");
    for (const json& m : root["metrics"]) {
        if (!m.is_string() || !isStudyMetric(m.get<std::string>()))
            throw ConfigError(origin + ": metrics lists " + m.dump() + ", not one of " + metricList());
        spec.metrics.push_back(m.get<std::string>());
    }
    if (root.contains("margins")) {
        if (!root["margins"].is_object())
            throw ConfigError(origin + ": margins must be an object of {METRIC: margin}");
        for (const auto& [key, value] : root["margins"].items()) {
            if (std::find(spec.metrics.begin(), spec.metrics.end(), key) == spec.metrics.end())
                throw ConfigError(origin + ": margins." + key + " is not one of the study's metrics");
            if (!value.is_number() || !(value.get<double>() > 0) || !std::isfinite(value.get<double>()))
                throw ConfigError(origin + ": margins." + key + " must be a positive number (the equivalence margin)");
            spec.margins.push_back({key, value.get<double>()});
        }
    }
    if (!root.contains("expect") || !root["expect"].is_array() || root["expect"].empty())
        throw ConfigError(origin + ": expect must list the verdicts the claim predicts, e.g. {\"arm\": \"fp16\", "
                                   "\"against\": \"fp32\", \"metric\": \"final_train_loss\", \"verdict\": \"worse\"}");
    for (std::size_t i = 0; i < root["expect"].size(); ++i) {
        const json& e = root["expect"][i];
        const std::string where = origin + ": expect[" + std::to_string(i) + "]";
        if (!e.is_object())
            throw ConfigError(where + " must be {\"arm\", \"against\", \"metric\", \"verdict\"}");
        rejectUnknown(e, {"arm", "against", "metric", "verdict"}, where, "an expectation");
        StudyExpectation x{requireString(e, "arm", where), requireString(e, "against", where),
                           requireString(e, "metric", where), requireString(e, "verdict", where)};
        for (const std::string* arm : {&x.arm, &x.against})
            if (!names.contains(*arm))
                throw ConfigError(where + ": \"" + *arm + "\" is not an arm of this study");
        if (x.arm == x.against)
            throw ConfigError(where + " compares " + x.arm + " with itself");
        if (std::none_of(spec.margins.begin(), spec.margins.end(),
                         [&](const StudyMargin& m) { return m.metric == x.metric; }))
            throw ConfigError(where + ": metric " + x.metric + " has no margin in margins, so it gets no verdict");
        if (x.verdict != "equivalent" && x.verdict != "worse" && x.verdict != "better")
            throw ConfigError(where + ": verdict is \"" + x.verdict + "\"; one of equivalent, worse, better");
        spec.expectations.push_back(std::move(x));
    }

    json forks = json::array();
    for (const StudyForkArm& f : spec.forks) {
        json settings = json::object();
        for (const auto& [key, value] : f.settings)
            settings[key] = json::parse(value);
        forks.push_back({{"name", f.name}, {"arm", f.parent}, {"step", f.step}, {"set", settings}});
    }
    spec.hash = hashOf(sweepSpecToJson(spec.sweep) + forks.dump());
    return spec;
}

StudySpec loadStudySpecFile(const std::string& path, bool full)
{
    std::ifstream in(path);
    if (!in)
        throw ConfigError(path + ": cannot open the study spec (does it exist and is it readable?)");
    std::stringstream text;
    text << in.rdbuf();
    return parseStudySpec(text.str(), path, std::filesystem::path(path).parent_path().string(), full);
}

std::string forkSettingText(const std::pair<std::string, std::string>& setting)
{
    const json value = json::parse(setting.second);
    return setting.first + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
}

std::vector<std::string> armsThatCannotRun(const StudySpec& spec)
{
    std::vector<std::string> problems;
    const auto modelTakes = [](const RunConfig& config) {
        (void)plannedGemmCoverage(config.model, config.precision, config.recipe);
    };
    std::vector<std::optional<RunConfig>> trained(spec.sweep.arms.size());
    for (std::size_t a = 0; a < spec.sweep.arms.size(); ++a) {
        SweepSpec one = spec.sweep;
        one.arms = {spec.sweep.arms[a]};
        one.seeds = {spec.sweep.seeds.front()};
        try {
            const SweepPlan plan = expandSweep(one, spec.file);
            modelTakes(plan.runs.front().config);
            trained[a] = plan.runs.front().config;
        } catch (const std::exception& e) {
            problems.push_back("arm " + one.arms.front().name + ": " + e.what());
        }
    }
    for (const StudyForkArm& fork : spec.forks) {
        std::size_t a = 0;
        while (a < spec.sweep.arms.size() && spec.sweep.arms[a].name != fork.parent)
            ++a;
        if (a == spec.sweep.arms.size() || !trained[a])
            continue; // its parent's problem is named already
        try {
            RunConfig config = *trained[a];
            for (const auto& setting : fork.settings) {
                const RunField* field = findRunConfigField(setting.first);
                if (!field)
                    throw ConfigError("fork.set: \"" + setting.first +
                                      "\" is not a config field a fork can change (docs/config.md lists them)");
                const std::string text = forkSettingText(setting);
                field->setText(config, text.substr(setting.first.size() + 1), "fork.set " + setting.first);
            }
            validateRunConfig(config, "fork.set");
            modelTakes(config);
        } catch (const std::exception& e) {
            problems.push_back("arm " + fork.name + ": " + e.what());
        }
    }
    return problems;
}

std::string studyForkTag(const StudySpec& spec, const std::string& arm, std::uint64_t seed)
{
    return "study:" + spec.name + ":" + spec.hash + ":" + arm + ":seed" + std::to_string(seed);
}

std::vector<PlannedFork> plannedForks(const StudySpec& spec)
{
    std::vector<PlannedFork> forks;
    if (spec.forks.empty())
        return forks;
    const SweepPlan plan = expandSweep(spec.sweep, spec.file);
    for (const StudyForkArm& fork : spec.forks)
        for (const std::uint64_t seed : spec.sweep.seeds)
            for (const SweepRun& run : plan.runs) {
                const SweepConfiguration& c = plan.configurations[std::size_t(run.configuration)];
                if (run.seed == seed && spec.sweep.arms[std::size_t(c.arm)].name == fork.parent)
                    forks.push_back({&fork, seed, run.index});
            }
    return forks;
}

} // namespace mantissa::sweep
