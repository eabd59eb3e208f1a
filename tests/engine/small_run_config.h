#pragma once
// The small synthetic problem the trainer tests share: 8x8 single-channel samples of four
// learnable classes, 512 to train on, 128 to test, and a 64-32-32-4 MLP with batch 32 for
// two epochs on one thread (a few milliseconds per run).
#include "engine/config/run_config.h"

#include <string>

namespace mantissa::test_support {

inline LayerSpec layerSpec(LayerKind type, std::int64_t units = 0, std::optional<Activation> activation = {})
{
    LayerSpec l;
    l.type = type;
    l.units = units;
    l.activation = activation;
    return l;
}

inline RunConfig smallSyntheticConfig(PrecisionMode mode = PrecisionMode::Fp32)
{
    RunConfig c;
    c.name = "small";
    c.model.input = {1, 8, 8};
    c.model.classes = 4;
    c.model.layers = {layerSpec(LayerKind::Flatten), layerSpec(LayerKind::Linear, 32, Activation::Relu),
                      layerSpec(LayerKind::Linear, 32, Activation::Relu), layerSpec(LayerKind::Linear, 4)};
    c.data.dataset = DatasetKind::Synthetic;
    c.data.syntheticShape = {1, 8, 8};
    c.data.syntheticClasses = 4;
    c.data.syntheticTrain = 512;
    c.data.syntheticTest = 128;
    c.optimizer.lr = 0.05f;
    c.training.batchSize = 32;
    c.training.epochs = 2;
    c.training.threads = 1;
    c.precision = mode;
    return c;
}

// The same data through conv + batch norm + ReLU, a residual block (conv + batch norm inside),
// max pooling and a linear layer: one epoch.
inline RunConfig smallConvConfig(PrecisionMode mode = PrecisionMode::Fp32)
{
    RunConfig c = smallSyntheticConfig(mode);
    LayerSpec conv;
    conv.type = LayerKind::Conv2d;
    conv.filters = 8;
    conv.padding = 1;
    LayerSpec branchConv = conv;
    branchConv.activation = Activation::Relu;
    LayerSpec residual;
    residual.type = LayerKind::Residual;
    residual.body = {branchConv, layerSpec(LayerKind::BatchNorm)};
    LayerSpec pool = layerSpec(LayerKind::MaxPool);
    pool.kernel = 2;
    c.model.layers = {conv, layerSpec(LayerKind::BatchNorm), layerSpec(LayerKind::Relu),     residual,
                      pool, layerSpec(LayerKind::Flatten),   layerSpec(LayerKind::Linear, 4)};
    c.training.epochs = 1;
    return c;
}

} // namespace mantissa::test_support
