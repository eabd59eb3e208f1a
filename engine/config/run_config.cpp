// JSON <-> RunConfig. Parsing is strict: an unknown field is an error naming it, because a
// misspelt "momentun" that silently trains with the default is worse than a refusal.
#include "engine/config/run_config.h"

#include "engine/util/check.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>

namespace mantissa {

using nlohmann::json;

namespace {

// Reads fields of one JSON object, remembering which were consumed so that leftovers
// (misspellings) can be reported with their path.
class ObjectReader {
public:
    ObjectReader(const json& object, std::string path, const std::string& origin)
        : m_object(object), m_path(std::move(path)), m_origin(origin)
    {
        if (!object.is_object())
            fail(m_path, "expected an object");
    }

    template <typename T>
    void read(const char* key, T& target)
    {
        m_seen.insert(key);
        auto it = m_object.find(key);
        if (it == m_object.end() || it->is_null())
            return;
        try {
            target = it->get<T>();
        } catch (const json::exception&) {
            fail(field(key), std::string("has the wrong type (") + it->type_name() + ")");
        }
    }

    // A field that picks one of an enum's values: its key must be one of the enum's table.
    template <typename E>
    void readEnum(const char* key, E& target)
    {
        std::string text(enumKey(target));
        read(key, text);
        const auto value = parseEnum<E>(text);
        if (!value)
            throw ConfigError(m_origin + ": " + unknownEnumMessage<E>(field(key), text));
        target = *value;
    }

    const json* child(const char* key)
    {
        m_seen.insert(key);
        auto it = m_object.find(key);
        return it == m_object.end() || it->is_null() ? nullptr : &*it;
    }

    void finish() const
    {
        for (auto it = m_object.begin(); it != m_object.end(); ++it)
            if (!m_seen.contains(it.key()))
                fail(field(it.key()), "is not a known field");
    }

    std::string field(const std::string& key) const { return m_path.empty() ? key : m_path + "." + key; }
    [[noreturn]] void fail(const std::string& where, const std::string& what) const
    {
        throw ConfigError(m_origin + ": " + where + " " + what);
    }

private:
    const json& m_object;
    std::string m_path;
    const std::string& m_origin;
    std::set<std::string> m_seen;
};

LayerSpec parseLayer(const json& j, const std::string& path, const std::string& origin)
{
    LayerSpec layer;
    ObjectReader r(j, path, origin);
    if (!r.child("type"))
        r.fail(path, "has no \"type\"");
    r.readEnum("type", layer.type);
    r.read("units", layer.units);
    r.read("inputs", layer.inputs);
    r.read("filters", layer.filters);
    r.read("kernel", layer.kernel);
    r.read("stride", layer.stride);
    r.read("padding", layer.padding);
    r.read("bias", layer.bias);
    std::string activation;
    r.read("activation", activation);
    // "none" and no key both mean no fused activation.
    if (!activation.empty() && activation != "none") {
        layer.activation = parseEnum<Activation>(activation);
        if (!layer.activation)
            r.fail(r.field("activation"), "is \"" + activation + "\"; expected none, " + enumKeyList<Activation>());
    }
    r.read("rate", layer.rate);
    r.read("epsilon", layer.epsilon);
    r.read("momentum", layer.momentum);
    r.read("init", layer.init);
    r.readEnum("shortcut", layer.shortcut);
    r.read("vocabulary", layer.vocabulary);
    r.read("heads", layer.heads);
    r.read("length", layer.length);
    r.read("causal", layer.causal);
    r.readEnum("norm", layer.norm);
    r.readEnum("softmax", layer.softmax);
    r.readEnum("statistics", layer.statistics);
    r.read("attention_dropout", layer.attentionDropout);
    r.read("tied", layer.tied);
    r.readEnum("precision", layer.precision);
    if (const json* body = r.child("layers")) {
        if (!body->is_array())
            r.fail(r.field("layers"), "must be an array of layers");
        for (std::size_t i = 0; i < body->size(); ++i)
            layer.body.push_back(parseLayer((*body)[i], r.field("layers") + "[" + std::to_string(i) + "]", origin));
    }
    r.finish();
    return layer;
}

json layerToJson(const LayerSpec& l)
{
    json j;
    j["type"] = enumKey(l.type);
    const LayerSpec d; // defaults are omitted so configs stay short and readable
    if (l.units)
        j["units"] = l.units;
    if (l.inputs)
        j["inputs"] = l.inputs;
    if (l.filters)
        j["filters"] = l.filters;
    // The fields of the layer's kind are written even at their default (layer_kind.cpp lists them).
    if (layerTakesField(l.type, LayerField::Kernel))
        j["kernel"] = l.kernel;
    // an unset stride stays unset so that it keeps following the kernel
    if (layerTakesField(l.type, LayerField::Stride) && l.stride != d.stride)
        j["stride"] = l.stride;
    if (layerTakesField(l.type, LayerField::Padding))
        j["padding"] = l.padding;
    if (l.bias != d.bias)
        j["bias"] = l.bias;
    if (l.activation)
        j["activation"] = enumKey(*l.activation);
    if (layerTakesField(l.type, LayerField::Rate))
        j["rate"] = l.rate;
    if (layerTakesField(l.type, LayerField::Epsilon))
        j["epsilon"] = l.epsilon;
    if (layerTakesField(l.type, LayerField::Momentum))
        j["momentum"] = l.momentum;
    if (layerTakesField(l.type, LayerField::Vocabulary))
        j["vocabulary"] = l.vocabulary;
    if (layerTakesField(l.type, LayerField::Heads))
        j["heads"] = l.heads;
    if (layerTakesField(l.type, LayerField::Length))
        j["length"] = l.length;
    if (layerTakesField(l.type, LayerField::Causal))
        j["causal"] = l.causal;
    if (layerTakesField(l.type, LayerField::Norm))
        j["norm"] = enumKey(l.norm);
    if (layerTakesField(l.type, LayerField::Softmax))
        j["softmax"] = enumKey(l.softmax);
    if (layerTakesField(l.type, LayerField::Statistics))
        j["statistics"] = enumKey(l.statistics);
    if (layerTakesField(l.type, LayerField::AttentionDropout))
        j["attention_dropout"] = l.attentionDropout;
    if (l.tied)
        j["tied"] = true;
    if (!l.init.empty())
        j["init"] = l.init;
    if (l.precision != LayerPrecision::Auto)
        j["precision"] = enumKey(l.precision);
    if (l.type == LayerKind::Residual) {
        j["shortcut"] = enumKey(l.shortcut);
        j["layers"] = json::array();
        for (const auto& b : l.body)
            j["layers"].push_back(layerToJson(b));
    }
    return j;
}

} // namespace

RunConfig parseRunConfig(const std::string& text, const std::string& origin)
{
    json root;
    try {
        root = json::parse(text);
    } catch (const json::parse_error& e) {
        throw ConfigError(origin + ": not valid JSON: " + e.what());
    }
    RunConfig c;
    ObjectReader r(root, "", origin);
    r.read("name", c.name);
    r.read("description", c.description);

    if (const json* m = r.child("model")) {
        ObjectReader mr(*m, "model", origin);
        mr.read("input", c.model.input);
        mr.read("classes", c.model.classes);
        if (const json* layers = mr.child("layers")) {
            if (!layers->is_array())
                mr.fail("model.layers", "must be an array");
            for (std::size_t i = 0; i < layers->size(); ++i)
                c.model.layers.push_back(parseLayer((*layers)[i], "model.layers[" + std::to_string(i) + "]", origin));
        }
        mr.finish();
    } else {
        r.fail("model", "is missing");
    }

    if (const json* d = r.child("data")) {
        ObjectReader dr(*d, "data", origin);
        dr.readEnum("dataset", c.data.dataset);
        dr.read("directory", c.data.directory);
        dr.read("validation_split", c.data.validationSplit);
        dr.read("normalize", c.data.normalize);
        dr.read("limit_train", c.data.limitTrain);
        dr.read("limit_test", c.data.limitTest);
        dr.read("synthetic_train", c.data.syntheticTrain);
        dr.read("synthetic_test", c.data.syntheticTest);
        dr.read("synthetic_shape", c.data.syntheticShape);
        dr.read("synthetic_classes", c.data.syntheticClasses);
        dr.read("synthetic_noise", c.data.syntheticNoise);
        dr.read("context", c.data.context);
        dr.finish();
    }

    if (const json* o = r.child("optimizer")) {
        ObjectReader orr(*o, "optimizer", origin);
        orr.readEnum("type", c.optimizer.type);
        orr.read("lr", c.optimizer.lr);
        orr.read("momentum", c.optimizer.momentum);
        orr.read("nesterov", c.optimizer.nesterov);
        orr.read("weight_decay", c.optimizer.weightDecay);
        orr.read("beta1", c.optimizer.beta1);
        orr.read("beta2", c.optimizer.beta2);
        orr.read("epsilon", c.optimizer.epsilon);
        orr.read("grad_clip_norm", c.optimizer.gradClipNorm);
        orr.finish();
    }

    if (const json* s = r.child("schedule")) {
        ObjectReader sr(*s, "schedule", origin);
        sr.readEnum("type", c.schedule.type);
        sr.read("milestones", c.schedule.milestones);
        sr.read("gamma", c.schedule.gamma);
        sr.read("warmup_steps", c.schedule.warmupSteps);
        sr.read("min_lr", c.schedule.minLr);
        sr.read("max_lr", c.schedule.maxLr);
        sr.read("pct_start", c.schedule.pctStart);
        sr.finish();
    }

    if (const json* p = r.child("precision")) {
        ObjectReader pr(*p, "precision", origin);
        pr.readEnum("mode", c.precision);
        if (const json* ls = pr.child("loss_scale")) {
            ObjectReader lr(*ls, "precision.loss_scale", origin);
            lr.readEnum("type", c.lossScale.type);
            lr.read("value", c.lossScale.value);
            lr.read("initial", c.lossScale.initial);
            lr.read("growth_factor", c.lossScale.growthFactor);
            lr.read("backoff_factor", c.lossScale.backoffFactor);
            lr.read("growth_interval", c.lossScale.growthInterval);
            lr.read("hysteresis", c.lossScale.hysteresis);
            lr.read("min", c.lossScale.minScale);
            lr.read("max", c.lossScale.maxScale);
            lr.finish();
        }
        if (const json* rc = pr.child("recipe")) {
            ObjectReader rr(*rc, "precision.recipe", origin);
            rr.readEnum("scale_rule", c.recipe.scaleRule);
            rr.read("amax_history", c.recipe.amaxHistory);
            rr.readEnum("stochastic_rounding", c.recipe.stochasticRounding);
            rr.readEnum("keep_first_last", c.recipe.keepFirstLast);
            rr.readEnum("weight_blocks_2d", c.recipe.weightBlocks2d);
            rr.readEnum("hadamard_wgrad", c.recipe.hadamardWgrad);
            rr.readEnum("power_of_two_scales", c.recipe.powerOfTwoScales);
            rr.readEnum("attention", c.recipe.attention);
            rr.finish();
        }
        pr.finish();
    }

    if (const json* t = r.child("training")) {
        ObjectReader tr(*t, "training", origin);
        tr.read("batch_size", c.training.batchSize);
        tr.read("epochs", c.training.epochs);
        tr.read("max_steps", c.training.maxSteps);
        tr.read("seed", c.training.seed);
        tr.read("device", c.training.device);
        tr.read("threads", c.training.threads);
        tr.readEnum("cpu_kernels", c.training.cpuKernels);
        tr.read("tf32", c.training.tf32);
        tr.read("cudnn_workspace_mib", c.training.cudnnWorkspaceMiB);
        tr.readEnum("fp8_gemm", c.training.fp8Gemm);
        tr.readEnum("graphs", c.training.graphs);
        tr.readEnum("run_ahead", c.training.runAhead);
        tr.read("eval_batch_size", c.training.evalBatchSize);
        tr.read("checkpoint_every_epochs", c.training.checkpointEveryEpochs);
        tr.read("init_from", c.training.initFrom);
        tr.finish();
    }
    if (const json* n = r.child("numerics")) {
        ObjectReader nr(*n, "numerics", origin);
        nr.read("every", c.numerics.every);
        nr.read("scaled_gradients", c.numerics.scaledGradients);
        nr.finish();
    }
    if (const json* d = r.child("distributed")) {
        ObjectReader dr(*d, "distributed", origin);
        dr.read("world_size", c.distributed.worldSize);
        dr.readEnum("allreduce_dtype", c.distributed.allReduceType);
        dr.readEnum("reduction", c.distributed.reduction);
        dr.readEnum("batch_norm", c.distributed.batchNorm);
        dr.finish();
    }
    r.finish();

    validateRunConfig(c, origin);
    return c;
}

void validateRunConfig(const RunConfig& c, const std::string& origin)
{
    if (c.distributed.worldSize < 0 || c.distributed.worldSize > 65536)
        throw ConfigError(origin + ": distributed.world_size must be 0 (as launched) or 1 to 65536 ranks (got " +
                          std::to_string(c.distributed.worldSize) + ")");

    if (c.numerics.every < 0 || c.numerics.every > kMaxNumericsEvery)
        throw ConfigError(origin + ": numerics.every must be 0 (off) or 1 to " + std::to_string(kMaxNumericsEvery) +
                          " steps (got " + std::to_string(c.numerics.every) + ")");
    validateRecipeOptions(c.recipe, origin);
    if (c.training.cudnnWorkspaceMiB < 0 || c.training.cudnnWorkspaceMiB > 65536)
        throw ConfigError(origin + ": training.cudnn_workspace_mib must be 0 to 65536 (got " +
                          std::to_string(c.training.cudnnWorkspaceMiB) + ")");
    if (c.training.checkpointEveryEpochs < 0)
        throw ConfigError(origin +
                          ": training.checkpoint_every_epochs must be 0 (at the end of the run only) or a "
                          "positive number of epochs (got " +
                          std::to_string(c.training.checkpointEveryEpochs) + ")");
    if (c.training.batchSize <= 0)
        throw ConfigError(origin + ": training.batch_size must be positive (got " +
                          std::to_string(c.training.batchSize) + ")");
    if (c.training.epochs <= 0 && c.training.maxSteps <= 0)
        throw ConfigError(origin + ": training.epochs must be positive (got " + std::to_string(c.training.epochs) +
                          ")");
}

RunConfig loadRunConfigFile(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
        throw ConfigError(path + ": cannot open the config file (does it exist and is it readable?)");
    std::stringstream buffer;
    buffer << in.rdbuf();
    return parseRunConfig(buffer.str(), path);
}

std::string runConfigToJson(const RunConfig& c, int indent)
{
    json j;
    j["name"] = c.name;
    if (!c.description.empty())
        j["description"] = c.description;
    j["model"]["input"] = c.model.input;
    j["model"]["classes"] = c.model.classes;
    j["model"]["layers"] = json::array();
    for (const auto& l : c.model.layers)
        j["model"]["layers"].push_back(layerToJson(l));
    j["data"] = {{"dataset", enumKey(c.data.dataset)},         {"directory", c.data.directory},
                 {"validation_split", c.data.validationSplit}, {"normalize", c.data.normalize},
                 {"limit_train", c.data.limitTrain},           {"limit_test", c.data.limitTest},
                 {"synthetic_train", c.data.syntheticTrain},   {"synthetic_test", c.data.syntheticTest},
                 {"synthetic_shape", c.data.syntheticShape},   {"synthetic_classes", c.data.syntheticClasses},
                 {"synthetic_noise", c.data.syntheticNoise}};
    // Only text runs carry a context, so the JSON of every other run stays as it was.
    if (c.data.dataset == DatasetKind::Text)
        j["data"]["context"] = c.data.context;
    j["optimizer"] = {{"type", enumKey(c.optimizer.type)},
                      {"lr", c.optimizer.lr},
                      {"momentum", c.optimizer.momentum},
                      {"nesterov", c.optimizer.nesterov},
                      {"weight_decay", c.optimizer.weightDecay},
                      {"beta1", c.optimizer.beta1},
                      {"beta2", c.optimizer.beta2},
                      {"epsilon", c.optimizer.epsilon},
                      {"grad_clip_norm", c.optimizer.gradClipNorm}};
    j["schedule"] = {{"type", enumKey(c.schedule.type)}, {"milestones", c.schedule.milestones},
                     {"gamma", c.schedule.gamma},        {"warmup_steps", c.schedule.warmupSteps},
                     {"min_lr", c.schedule.minLr},       {"max_lr", c.schedule.maxLr},
                     {"pct_start", c.schedule.pctStart}};
    const LossScaleSpec& ls = c.lossScale;
    j["precision"] = {{"mode", enumKey(c.precision)},
                      {"loss_scale",
                       {{"type", enumKey(ls.type)},
                        {"value", ls.value},
                        {"initial", ls.initial},
                        {"growth_factor", ls.growthFactor},
                        {"backoff_factor", ls.backoffFactor},
                        {"growth_interval", ls.growthInterval},
                        {"hysteresis", ls.hysteresis},
                        {"min", ls.minScale},
                        {"max", ls.maxScale}}}};
    if (PrecisionPolicy(c.precision).recipe() != GemmRecipe::None || c.recipe != RecipeOptions{})
        j["precision"]["recipe"] = {{"scale_rule", enumKey(c.recipe.scaleRule)},
                                    {"amax_history", c.recipe.amaxHistory},
                                    {"stochastic_rounding", enumKey(c.recipe.stochasticRounding)},
                                    {"keep_first_last", enumKey(c.recipe.keepFirstLast)},
                                    {"weight_blocks_2d", enumKey(c.recipe.weightBlocks2d)},
                                    {"hadamard_wgrad", enumKey(c.recipe.hadamardWgrad)},
                                    {"power_of_two_scales", enumKey(c.recipe.powerOfTwoScales)}};
    // Written only when set, so that the recipe runs stored before it read back and are written
    // again byte for byte.
    if (c.recipe.attention != RecipeSwitch::Auto)
        j["precision"]["recipe"]["attention"] = enumKey(c.recipe.attention);
    j["training"] = {{"batch_size", c.training.batchSize},
                     {"epochs", c.training.epochs},
                     {"max_steps", c.training.maxSteps},
                     {"seed", c.training.seed},
                     {"device", c.training.device},
                     {"threads", c.training.threads},
                     {"tf32", c.training.tf32},
                     {"cudnn_workspace_mib", c.training.cudnnWorkspaceMiB},
                     {"graphs", enumKey(c.training.graphs)},
                     {"run_ahead", enumKey(c.training.runAhead)},
                     {"eval_batch_size", c.training.evalBatchSize}};
    j["training"]["checkpoint_every_epochs"] = c.training.checkpointEveryEpochs;
    j["training"]["init_from"] = c.training.initFrom;
    j["training"]["cpu_kernels"] = enumKey(c.training.cpuKernels);
    // Written only when set, so that stored configs read back and are written byte for byte.
    if (c.training.fp8Gemm != Fp8Gemm::Auto)
        j["training"]["fp8_gemm"] = enumKey(c.training.fp8Gemm);
    j["numerics"] = {{"every", c.numerics.every}, {"scaled_gradients", c.numerics.scaledGradients}};
    // Written only when set, so that the configs of single-process runs stored before it read
    // back and are written again byte for byte.
    if (c.distributed != DistributedSpec{})
        j["distributed"] = {{"world_size", c.distributed.worldSize},
                            {"allreduce_dtype", enumKey(c.distributed.allReduceType)},
                            {"reduction", enumKey(c.distributed.reduction)},
                            {"batch_norm", enumKey(c.distributed.batchNorm)}};
    return j.dump(indent);
}

} // namespace mantissa
