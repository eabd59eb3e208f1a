// Checkpoint files: one text header line, one JSON line describing every tensor, then the
// tensors' values as little-endian fp32. Everything is stored in fp32 whatever the run's
// precision, so a checkpoint moves freely between precision modes.
#include "engine/train/checkpoint_weights.h"
#include "engine/train/trainer.h"

#include "engine/util/check.h"

#include <nlohmann/json.hpp>

#include <algorithm>
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

std::vector<NamedTensor> optimizerTensors(Model& model)
{
    std::vector<NamedTensor> out;
    for (Parameter* p : model.parametersInBackwardOrder()) {
        if (p->state1.defined())
            out.push_back({p->name + "#state1", &p->state1});
        if (p->state2.defined())
            out.push_back({p->name + "#state2", &p->state2});
        if (p->compensation.defined())
            out.push_back({p->name + kCompensationSuffix, &p->compensation});
    }
    return out;
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
        for (const auto& [name, shape] : m_entries) {
            auto it = targets.find(name);
            if (it == targets.end() && name.find('#') == std::string::npos)
                throw IoError(m_path + ": the checkpoint has tensor " + name + " " + shape.toString() +
                              ", which this model lacks; was it saved from a different model?");
            if (it != targets.end() && it->second->shape() != shape)
                throw IoError(m_path + ": tensor " + name + " has shape " + shape.toString() +
                              " in the checkpoint but " + it->second->shape().toString() + " in this model");
        }
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
    header["scaler"] = {
        {"scale", scaler.scale}, {"good_steps", scaler.goodSteps}, {"hysteresis_left", scaler.hysteresisLeft}};
    header["optimizer_steps"] = m_optimizer.stepCount();
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

} // namespace mantissa
