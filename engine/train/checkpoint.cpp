// Checkpoint files: one text header line, one JSON line describing every tensor, then the
// tensors' values as little-endian fp32. Everything is stored in fp32 whatever the run's
// precision, so a checkpoint moves freely between precision modes.
#include "engine/train/checkpoint_weights.h"
#include "engine/train/trainer.h"

#include "engine/model/gemm_coverage.h"
#include "engine/util/check.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

namespace mantissa {

namespace {

constexpr const char* kMagic = "MANTISSA-CHECKPOINT 1";
// Per-parameter optimizer state is stored as "<parameter>#<what>"; '#' marks it as such.
constexpr const char* kCompensationSuffix = "#compensation";

struct NamedTensor {
    std::string name;
    Tensor* tensor;
};

std::vector<NamedTensor> weightTensors(Model& model)
{
    std::vector<NamedTensor> out;
    for (Parameter* p : model.parametersInBackwardOrder())
        out.push_back({p->name, &p->master});
    for (auto& [name, tensor] : model.buffers())
        out.push_back({name, tensor});
    return out;
}

// Every optimizer state tensor a parameter holds (Parameter::optimizerState), named
// "<parameter>#<state>".
std::vector<NamedTensor> optimizerTensors(Model& model)
{
    std::vector<NamedTensor> out;
    for (Parameter* p : model.parametersInBackwardOrder())
        for (const auto& [state, tensor] : p->optimizerState())
            if (tensor->defined())
                out.push_back({p->name + "#" + state, tensor});
    return out;
}

const char* scalerKindKey(LossScaler::Kind kind)
{
    switch (kind) {
    case LossScaler::Kind::None: return "none";
    case LossScaler::Kind::Static: return "static";
    case LossScaler::Kind::Dynamic: return "dynamic";
    }
    return "none";
}

// A float as its bits: exact, and NaN or infinity (an amax can be) survive JSON.
std::uint32_t floatBits(float v) { return std::bit_cast<std::uint32_t>(v); }
float bitsFloat(const nlohmann::json& j) { return std::bit_cast<float>(j.get<std::uint32_t>()); }

nlohmann::json positionJson(const TrainingPosition& p)
{
    return {{"step", p.step},
            {"epoch", p.epoch},
            {"batch_index", p.batchIndex},
            {"epoch_loss_sum", p.epochLoss},
            {"epoch_correct", p.epochCorrect},
            {"epoch_samples", p.epochSamples},
            {"epoch_finite_steps", p.finiteSteps},
            {"consecutive_skips", p.consecutiveSkips}};
}

TrainingPosition positionFromJson(const nlohmann::json& j)
{
    TrainingPosition p;
    p.step = j.at("step").get<std::int64_t>();
    p.epoch = j.at("epoch").get<int>();
    p.batchIndex = j.at("batch_index").get<std::int64_t>();
    p.epochLoss = j.at("epoch_loss_sum").get<double>();
    p.epochCorrect = j.at("epoch_correct").get<std::int64_t>();
    p.epochSamples = j.at("epoch_samples").get<std::int64_t>();
    p.finiteSteps = j.at("epoch_finite_steps").get<std::int64_t>();
    p.consecutiveSkips = j.at("consecutive_skips").get<int>();
    return p;
}

// The delayed-scaling history of every GEMM site that has one, by site.
nlohmann::json recipeStateJson(const Model& model)
{
    nlohmann::json sites = nlohmann::json::array();
    const std::vector<GemmSite> all = gemmSites(model.graph());
    for (std::size_t i = 0; i < all.size(); ++i) {
        const auto& histories = all[i].layer->gemmInputs().amaxHistories();
        if (std::all_of(histories.begin(), histories.end(), [](const GemmInputQuantizer::AmaxHistory& h) {
                return h == GemmInputQuantizer::AmaxHistory{};
            }))
            continue;
        nlohmann::json operands = nlohmann::json::array();
        for (const auto& h : histories) {
            std::vector<std::uint32_t> amaxes;
            for (float a : h.amaxes)
                amaxes.push_back(floatBits(a));
            operands.push_back({{"amaxes", amaxes},
                                {"pending", floatBits(h.pending)},
                                {"open", h.open},
                                {"step", h.step},
                                {"scale", floatBits(h.scale)}});
        }
        sites.push_back({{"site", i}, {"layer", all[i].layer->name()}, {"operands", operands}});
    }
    return sites;
}

// Restores recipeStateJson's histories; false (nothing restored) when the sites differ.
bool restoreRecipeState(Model& model, const nlohmann::json& sites)
{
    const std::vector<GemmSite> all = gemmSites(model.graph());
    for (const auto& site : sites) {
        const auto i = site.at("site").get<std::size_t>();
        if (i >= all.size() || all[i].layer->name() != site.at("layer").get<std::string>())
            return false;
    }
    for (const auto& site : sites) {
        std::array<GemmInputQuantizer::AmaxHistory, 3> histories;
        const auto& operands = site.at("operands");
        for (std::size_t k = 0; k < histories.size() && k < operands.size(); ++k) {
            auto& h = histories[k];
            for (const auto& a : operands[k].at("amaxes"))
                h.amaxes.push_back(bitsFloat(a));
            h.pending = bitsFloat(operands[k].at("pending"));
            h.open = operands[k].at("open").get<bool>();
            h.step = operands[k].at("step").get<std::uint64_t>();
            h.scale = bitsFloat(operands[k].at("scale"));
        }
        all[site.at("site").get<std::size_t>()].layer->gemmInputs().restoreAmaxHistories(histories);
    }
    return true;
}

// Kahan's compensation is missing from a checkpoint saved under other master weights: a run
// that switches to bf16-kahan from it starts with zero compensation, as a fresh run does.
bool mayBeMissing(const std::string& name) { return name.ends_with(kCompensationSuffix); }

// An open checkpoint file, its header read.
class CheckpointReader {
public:
    explicit CheckpointReader(const std::string& path) : m_path(path), m_in(path, std::ios::binary)
    {
        if (!m_in)
            throw IoError(path + ": cannot open the checkpoint");
        std::string magic, headerLine;
        std::getline(m_in, magic);
        if (magic != kMagic)
            throw IoError(path + ": not a Mantissa checkpoint (bad header)");
        std::getline(m_in, headerLine);
        try {
            m_header = nlohmann::json::parse(headerLine);
            for (const auto& entry : m_header.at("tensors"))
                m_entries.emplace_back(entry.at("name").get<std::string>(),
                                       Shape(entry.at("shape").get<std::vector<std::int64_t>>()));
        } catch (const nlohmann::json::exception&) {
            throw IoError(path + ": the checkpoint's tensor table is corrupt");
        }
    }

    const nlohmann::json& header() const { return m_header; }

    bool hasEntry(const std::string& name) const
    {
        return std::ranges::any_of(m_entries, [&](const auto& entry) { return entry.first == name; });
    }

    // Uploads the stored values of `targets` (optimizer state, named "...#stateN", is skipped
    // with weightsOnly). Every shape is checked before any value is uploaded, so a checkpoint
    // that does not fit leaves the model's weights as they were.
    void upload(Backend& backend, const std::map<std::string, Tensor*>& targets, bool weightsOnly)
    {
        checkFits(targets);
        std::size_t loaded = 0;
        for (const auto& [name, shape] : m_entries) {
            std::vector<float> values(static_cast<std::size_t>(shape.numel()));
            if (!m_in.read(reinterpret_cast<char*>(values.data()),
                           static_cast<std::streamsize>(values.size() * sizeof(float))))
                throw IoError(m_path + ": truncated while reading tensor " + name);
            auto it = targets.find(name);
            if (it == targets.end())
                continue; // optimizer state when loading weights only
            backend.upload(values.data(), *it->second);
            ++loaded;
        }
        std::size_t expected = 0;
        for (auto& [name, tensor] : targets) {
            if (mayBeMissing(name) && !hasEntry(name)) {
                backend.fill(*tensor, 0.0f);
                continue;
            }
            expected += name.find('#') == std::string::npos || !weightsOnly ? 1 : 0;
        }
        if (loaded < expected)
            throw IoError(m_path + ": the checkpoint lacks " + std::to_string(expected - loaded) +
                          " of this model's tensors; was it saved from a different model?");
    }

    // Every weight the checkpoint holds exists in `targets` with its shape (IoError naming the
    // tensor and both shapes otherwise).
    void checkFits(const std::map<std::string, Tensor*>& targets) const
    {
        for (const auto& [name, shape] : m_entries) {
            auto it = targets.find(name);
            if (it == targets.end() && name.find('#') == std::string::npos)
                throw IoError(m_path + ": the checkpoint has tensor " + name + " " + shape.toString() +
                              ", which this model lacks; was it saved from a different model?");
            if (it != targets.end() && it->second->shape() != shape)
                throw IoError(m_path + ": tensor " + name + " has shape " + shape.toString() +
                              " in the checkpoint but " + it->second->shape().toString() + " in this model");
        }
        std::size_t weights = 0, matched = 0;
        for (const auto& [name, tensor] : targets)
            weights += name.find('#') == std::string::npos ? 1 : 0;
        for (const auto& [name, shape] : m_entries)
            matched += name.find('#') == std::string::npos && targets.contains(name) ? 1 : 0;
        if (matched < weights)
            throw IoError(m_path + ": the checkpoint lacks " + std::to_string(weights - matched) +
                          " of this model's tensors; was it saved from a different model?");
    }

private:
    std::string m_path;
    std::ifstream m_in;
    nlohmann::json m_header;
    std::vector<std::pair<std::string, Shape>> m_entries;
};

// Refreshes the low-precision working copies from the loaded masters.
void refreshWorkingCopies(Backend& backend, const std::vector<Parameter*>& params)
{
    for (Parameter* p : params)
        if (!p->working.sharesStorageWith(p->master))
            backend.cast(p->master, p->working);
}

} // namespace

void loadCheckpointWeights(Model& model, Backend& backend, const std::string& path)
{
    CheckpointReader reader(path);
    std::map<std::string, Tensor*> targets;
    for (auto& t : weightTensors(model))
        targets[t.name] = t.tensor;
    reader.upload(backend, targets, true);
    refreshWorkingCopies(backend, model.parametersInBackwardOrder());
}

void Trainer::saveCheckpoint(const std::string& path) const
{
    auto& model = *m_model;
    std::vector<NamedTensor> tensors = weightTensors(model);
    for (auto& t : optimizerTensors(model))
        tensors.push_back(t);
    nlohmann::json header;
    header["config"] = nlohmann::json::parse(runConfigToJson(m_config, -1));
    const LossScalerState scaler = m_scaler.state();
    header["scaler"] = {{"kind", scalerKindKey(m_scaler.kind())},
                        {"scale", scaler.scale},
                        {"scale_bits", floatBits(scaler.scale)},
                        {"good_steps", scaler.goodSteps},
                        {"hysteresis_left", scaler.hysteresisLeft}};
    header["optimizer_steps"] = m_optimizer.stepCount();
    header["position"] = positionJson(m_position);
    header["recipe_state"] = recipeStateJson(model);
    header["tensors"] = nlohmann::json::array();
    for (auto& t : tensors)
        header["tensors"].push_back({{"name", t.name}, {"shape", t.tensor->shape().dims()}});

    // Each tensor is checked as it is written: a checkpoint with a NaN or an infinity would poison
    // every run started from it, so the partial file is removed and nothing takes its name.
    const std::string temporary = path + ".partial";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        if (!out)
            throw IoError(path + ": cannot write the checkpoint (is the directory writable?)");
        out << kMagic << '\n' << header.dump() << '\n';
        for (auto& t : tensors) {
            std::vector<float> values(static_cast<std::size_t>(t.tensor->numel()));
            m_backend.download(*t.tensor, values.data());
            const auto nonFinite =
                std::count_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
            if (nonFinite > 0) {
                out.close();
                std::remove(temporary.c_str());
                throw NonFiniteCheckpoint(path + ": not written, " + t.name + " holds " + std::to_string(nonFinite) +
                                          " non-finite value(s) of " + std::to_string(values.size()));
            }
            out.write(reinterpret_cast<const char*>(values.data()),
                      static_cast<std::streamsize>(values.size() * sizeof(float)));
        }
        if (!out.flush())
            throw IoError(path + ": writing the checkpoint failed (disk full?)");
    }
    // Rename last, so a crash mid-write never leaves a truncated file under the real name.
    if (std::rename(temporary.c_str(), path.c_str()) != 0)
        throw IoError(path + ": cannot move the finished checkpoint into place");
}

void Trainer::loadCheckpoint(const std::string& path, bool weightsOnly)
{
    CheckpointReader reader(path);
    std::map<std::string, Tensor*> targets;
    for (auto& t : weightTensors(*m_model))
        targets[t.name] = t.tensor;
    if (!weightsOnly)
        for (auto& t : optimizerTensors(*m_model))
            targets[t.name] = t.tensor;
    reader.upload(m_backend, targets, weightsOnly);
    refreshWorkingCopies(m_backend, m_params);
    const nlohmann::json& header = reader.header();
    if (!weightsOnly) {
        const auto& s = header.at("scaler");
        m_scaler.restore(
            {s.at("scale").get<float>(), s.at("good_steps").get<std::int64_t>(), s.at("hysteresis_left").get<int>()});
        m_optimizer.setStepCount(header.at("optimizer_steps").get<std::int64_t>());
    }
}

std::string Trainer::resumeFrom(const std::string& path)
{
    CheckpointReader reader(path);
    const nlohmann::json& header = reader.header();
    if (!header.contains("position"))
        throw IoError(path + ": saved before checkpoints kept their place in the data order: its weights can start "
                             "a run (training.init_from) but it cannot be continued");
    const nlohmann::json current = nlohmann::json::parse(runConfigToJson(m_config, -1));
    const nlohmann::json& saved = header.at("config");
    try {
        // Optimizer state means something only to the algorithm that wrote it.
        const bool sameOptimizer = saved.at("optimizer").at("type") == current.at("optimizer").at("type");
        std::map<std::string, Tensor*> targets;
        for (auto& t : weightTensors(*m_model))
            targets[t.name] = t.tensor;
        try {
            reader.checkFits(targets);
        } catch (const IoError& e) {
            throw ConfigError(std::string("the model's shape differs from the saved run's, which a continued run "
                                          "cannot change: ") +
                              e.what());
        }
        if (sameOptimizer)
            for (auto& t : optimizerTensors(*m_model))
                targets[t.name] = t.tensor;
        reader.upload(m_backend, targets, !sameOptimizer);
        refreshWorkingCopies(m_backend, m_params);
        std::string carried = "weights";
        if (sameOptimizer) {
            m_optimizer.setStepCount(header.at("optimizer_steps").get<std::int64_t>());
            carried += ", optimizer state (step count " + std::to_string(m_optimizer.stepCount()) + ")";
        } else {
            carried += "; the optimizer starts fresh (" + saved.at("optimizer").at("type").get<std::string>() +
                       " before, " + current.at("optimizer").at("type").get<std::string>() + " now)";
        }
        const auto& s = header.at("scaler");
        if (s.value("kind", "") == scalerKindKey(m_scaler.kind()) && m_scaler.kind() != LossScaler::Kind::None) {
            const float scale = s.contains("scale_bits") ? bitsFloat(s.at("scale_bits")) : s.at("scale").get<float>();
            m_scaler.restore({scale, s.at("good_steps").get<std::int64_t>(), s.at("hysteresis_left").get<int>()});
            char figure[32];
            std::snprintf(figure, sizeof figure, "%g", static_cast<double>(scale));
            carried += std::string(", loss scaler (scale ") + figure + ", " +
                       std::to_string(m_scaler.state().goodSteps) + " good steps)";
        } else if (m_scaler.kind() != LossScaler::Kind::None) {
            carried += std::string("; the loss scaler starts fresh (") + s.value("kind", "unknown") + " before)";
        }
        const bool samePrecision = saved.at("precision") == current.at("precision") &&
                                   saved.value("recipe", nlohmann::json()) == current.value("recipe", nlohmann::json());
        const nlohmann::json& recipeState = header.value("recipe_state", nlohmann::json::array());
        if (!recipeState.empty()) {
            if (samePrecision && restoreRecipeState(*m_model, recipeState))
                carried += ", delayed-scaling history of " + std::to_string(recipeState.size()) + " GEMM sites";
            else
                carried += "; the recipe's scaling history starts fresh (the precision changed)";
        }
        m_resumeAt = positionFromJson(header.at("position"));
        m_position = *m_resumeAt;
        return carried + "; resuming after step " + std::to_string(m_resumeAt->step) + " (epoch " +
               std::to_string(m_resumeAt->epoch) + ", batch " + std::to_string(m_resumeAt->batchIndex) + " of " +
               std::to_string(m_stepsPerEpoch) + " in its shuffled order)";
    } catch (const nlohmann::json::exception& e) {
        throw IoError(path + ": the checkpoint's training state is corrupt (" + e.what() + ")");
    }
}

} // namespace mantissa
