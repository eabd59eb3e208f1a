#include "sweep/sweep_results.h"

#include "storage/run_store.h"

#include <QHash>
#include <QSet>

#include <nlohmann/json.hpp>

#include <map>
#include <set>

namespace mantissa::sweep {

namespace {

using storage::RunInfo;

bool isResult(const RunInfo& run) { return run.status == RunStatus::Finished || run.status == RunStatus::Diverged; }

// A config as "path" -> compact JSON value, over every leaf ("model.layers[1].units").
void flatten(const nlohmann::json& node, const std::string& path, std::map<std::string, std::string>& out)
{
    if (node.is_object() && !node.empty()) {
        for (const auto& [key, value] : node.items())
            flatten(value, path.empty() ? key : path + "." + key, out);
    } else if (node.is_array() && !node.empty()) {
        for (std::size_t i = 0; i < node.size(); ++i)
            flatten(node[i], path + "[" + std::to_string(i) + "]", out);
    } else {
        out[path] = node.dump();
    }
}

std::map<std::string, std::string> settingsOf(const RunInfo& run)
{
    std::map<std::string, std::string> settings;
    const nlohmann::json config = nlohmann::json::parse(run.configJson.toStdString(), nullptr, false);
    if (!config.is_discarded())
        flatten(config, "", settings);
    // What makes a seed group: everything but the seed (and the data order it drives).
    settings.erase("training.seed");
    return settings;
}

std::string lastMember(const std::string& path)
{
    const std::size_t dot = path.rfind('.');
    return dot == std::string::npos ? path : path.substr(dot + 1);
}

} // namespace

std::vector<ConfigurationResults> collectResults(const SweepPlan& plan, const QList<RunInfo>& sweepRuns)
{
    // Per index: the latest attempt that is a result, else the latest attempt.
    QHash<int, RunInfo> chosen;
    for (const RunInfo& run : sweepRuns) { // oldest attempt first
        if (!run.sweepIndex)
            continue;
        const auto it = chosen.constFind(*run.sweepIndex);
        if (it == chosen.constEnd() || isResult(run) || !isResult(*it))
            chosen.insert(*run.sweepIndex, run);
    }
    std::vector<ConfigurationResults> results(plan.configurations.size());
    for (std::size_t c = 0; c < results.size(); ++c)
        results[c].configuration = plan.configurations[c];
    for (const SweepRun& run : plan.runs) {
        ConfigurationResults& r = results[std::size_t(run.configuration)];
        ++r.planned;
        const auto it = chosen.constFind(run.index);
        if (it == chosen.constEnd())
            continue;
        r.runs << *it;
        switch (it->status) {
        case RunStatus::Finished: ++r.finished; break;
        case RunStatus::Diverged: ++r.diverged; break;
        case RunStatus::Failed: ++r.failed; break;
        default: ++r.interrupted; break; // interrupted, stopped, or still running
        }
    }
    return results;
}

std::vector<int> missingRuns(const SweepPlan& plan, const QList<RunInfo>& sweepRuns)
{
    QSet<int> done;
    for (const RunInfo& run : sweepRuns)
        if (run.sweepIndex && isResult(run))
            done.insert(*run.sweepIndex);
    std::vector<int> missing;
    for (const SweepRun& run : plan.runs)
        if (!done.contains(run.index))
            missing.push_back(run.index);
    return missing;
}

std::vector<ConfigurationResults> groupBySeed(const QList<RunInfo>& runs)
{
    std::vector<std::map<std::string, std::string>> groupSettings;
    std::vector<ConfigurationResults> groups;
    for (const RunInfo& run : runs) {
        const auto settings = settingsOf(run);
        std::size_t g = 0;
        while (g < groupSettings.size() && groupSettings[g] != settings)
            ++g;
        if (g == groupSettings.size()) {
            groupSettings.push_back(settings);
            groups.emplace_back();
            groups.back().configuration.index = int(g);
        }
        ConfigurationResults& group = groups[g];
        group.runs << run;
        ++group.planned;
        switch (run.status) {
        case RunStatus::Finished: ++group.finished; break;
        case RunStatus::Diverged: ++group.diverged; break;
        case RunStatus::Failed: ++group.failed; break;
        default: ++group.interrupted; break;
        }
    }
    // The settings in which the groups differ, in path order.
    std::set<std::string> keys;
    for (const auto& settings : groupSettings)
        for (const auto& [key, value] : settings)
            keys.insert(key);
    std::vector<std::string> differing;
    for (const std::string& key : keys) {
        const auto valueIn = [&key](const std::map<std::string, std::string>& settings) {
            const auto it = settings.find(key);
            return it == settings.end() ? std::string("(none)") : it->second;
        };
        for (const auto& settings : groupSettings)
            if (valueIn(settings) != valueIn(groupSettings.front())) {
                differing.push_back(key);
                break;
            }
    }
    for (std::size_t g = 0; g < groups.size(); ++g) {
        std::string label;
        for (const std::string& key : differing) {
            const auto it = groupSettings[g].find(key);
            const std::string value = sweepValueText(it == groupSettings[g].end() ? "null" : it->second);
            groups[g].configuration.assignments.push_back(key + "=" + value);
            label += (label.empty() ? "" : ", ") + (differing.size() == 1 ? value : lastMember(key) + "=" + value);
        }
        groups[g].configuration.label = label.empty() ? "base" : label;
    }
    return groups;
}

std::optional<long long> runSeed(const RunInfo& run)
{
    const nlohmann::json config = nlohmann::json::parse(run.configJson.toStdString(), nullptr, false);
    if (!config.is_object() || !config.contains("training") || !config["training"].is_object())
        return std::nullopt;
    const nlohmann::json& seed = config["training"].value("seed", nlohmann::json());
    if (!seed.is_number_integer())
        return std::nullopt;
    return seed.get<long long>();
}

bool hasSeveralSeeds(const std::vector<ConfigurationResults>& results)
{
    for (const ConfigurationResults& r : results) {
        std::set<std::optional<long long>> seeds;
        for (const RunInfo& run : r.runs)
            seeds.insert(runSeed(run));
        if (seeds.size() > 1)
            return true;
    }
    return false;
}

StoredSweep loadStoredSweep(const storage::RunStore& store, qint64 sweepId)
{
    StoredSweep sweep;
    sweep.info = store.sweep(sweepId);
    const std::string origin = "sweep " + std::to_string(sweepId);
    sweep.spec = parseSweepSpec(sweep.info.specJson.toStdString(), origin, "");
    sweep.plan = expandSweep(sweep.spec, origin);
    sweep.results = collectResults(sweep.plan, store.sweepRuns(sweepId));
    return sweep;
}

} // namespace mantissa::sweep
