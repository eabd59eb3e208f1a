#include "cli/advise_progress.h"

#include "engine/util/check.h"
#include "engine/util/enum_table.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace mantissa::cli {

namespace {

constexpr const char* kFileKind = "mantissa-advise-progress";

// NaN and infinities have no JSON number: kept as null.
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
double numberOr(const nlohmann::json& j, double otherwise) { return j.is_number() ? j.get<double>() : otherwise; }

} // namespace

std::string AdviseProgress::probeKey(const std::string& layer, LayerPrecision format)
{
    return layer + " " + std::string(enumKey(format));
}

std::string progressPath(const std::string& output)
{
    const std::string stem = output.ends_with(".json") ? output.substr(0, output.size() - 5) : output;
    return stem + ".probes.json";
}

std::string statePath(const std::string& output)
{
    const std::string stem = output.ends_with(".json") ? output.substr(0, output.size() - 5) : output;
    return stem + ".state.ckpt";
}

std::optional<AdviseProgress> loadProgress(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
        return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    try {
        const nlohmann::json j = nlohmann::json::parse(text.str());
        if (j.value("kind", "") != kFileKind)
            throw IoError(path + " is not a progress file of mantissa-cli advise; move it away or choose another -o");
        AdviseProgress p;
        p.key = j.at("key").get<std::string>();
        p.checkpoint = j.at("checkpoint").get<std::string>();
        for (const nlohmann::json& row : j.at("probes")) {
            LayerProbeResult r;
            r.layer = row.at("layer").get<std::string>();
            const auto format = parseEnum<LayerPrecision>(row.at("format").get<std::string>());
            if (!format)
                throw IoError(path + ": unknown format \"" + row.at("format").get<std::string>() + "\"");
            r.format = *format;
            r.misfit = row.value("misfit", "");
            r.loss = numberOr(row.at("loss"), NAN);
            r.lossIncrease = numberOr(row.at("loss_increase"), NAN);
            r.outputRelativeError = numberOr(row.at("output_relative_error"), NAN);
            p.probes[AdviseProgress::probeKey(r.layer, r.format)] = r;
        }
        for (const auto& item : j.at("scores").items()) {
            std::vector<double>& out = p.scores[item.key()];
            for (const nlohmann::json& v : item.value())
                out.push_back(numberOr(v, NAN));
        }
        return p;
    } catch (const nlohmann::json::exception& e) {
        throw IoError(path + " is not a readable progress file of mantissa-cli advise (" + e.what() +
                      "); move it away or choose another -o");
    }
}

void saveProgress(const std::string& path, const AdviseProgress& progress)
{
    nlohmann::json j;
    j["kind"] = kFileKind;
    j["key"] = progress.key;
    j["checkpoint"] = progress.checkpoint;
    j["probes"] = nlohmann::json::array();
    for (const auto& [key, r] : progress.probes)
        j["probes"].push_back({{"layer", r.layer},
                               {"format", std::string(enumKey(r.format))},
                               {"misfit", r.misfit},
                               {"loss", number(r.loss)},
                               {"loss_increase", number(r.lossIncrease)},
                               {"output_relative_error", number(r.outputRelativeError)}});
    j["scores"] = nlohmann::json::object();
    for (const auto& [format, values] : progress.scores) {
        nlohmann::json row = nlohmann::json::array();
        for (double v : values)
            row.push_back(number(v));
        j["scores"][format] = row;
    }
    const std::string temporary = path + ".partial";
    {
        std::ofstream out(temporary, std::ios::trunc);
        out << j.dump(1) << '\n';
        if (!out.flush())
            throw IoError("cannot write " + temporary);
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
        std::remove(temporary.c_str());
        throw IoError("cannot rename " + temporary + " to " + path);
    }
}

} // namespace mantissa::cli
