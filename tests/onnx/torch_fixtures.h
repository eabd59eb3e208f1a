#pragma once
// The PyTorch fixtures of make_fixtures.py as the ONNX tests read them: a model imported for
// the batch and sample shape its facts file names, its reference tensors (PyTorch's input,
// labels, logits, loss and gradients), the error measure the comparisons use, and the plain
// SGD loop the training tests take (gradient from the working-type grad, update of the fp32
// master, working copy rounded from it), so that what they test is the compiled graph under a
// policy, not the trainer.
#include "engine/onnx/compile_onnx.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/tensor_proto_file.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mantissa::onnx_import::fixtures {

inline const std::string kModels = std::string(MANTISSA_ONNX_MODELS) + "/torch/";

inline nlohmann::json facts(const std::string& name)
{
    std::ifstream file(kModels + name + ".json");
    if (!file)
        throw std::runtime_error("no fixture " + kModels + name + ".json (onnx_make_fixtures makes it)");
    return nlohmann::json::parse(file);
}

// Imported for the batch and sample shape its facts name.
inline OnnxGraph importFixture(const std::string& name)
{
    const nlohmann::json f = facts(name);
    ImportOptions options;
    options.sampleShape = f.at("sample_shape").get<std::vector<std::int64_t>>();
    options.batchSize = f.at("batch").get<std::int64_t>();
    return importOnnx(kModels + name + ".onnx", options);
}

inline OnnxTensor reference(const std::string& name, const std::string& key)
{
    return readTensorProtoFile(kModels + name + ".reference/" + key + ".pb");
}

// The largest |a - b| relative to the largest |b|: one figure per tensor, so that an element of
// a tensor that is near zero (where an elementwise relative error means nothing) does not decide.
inline double relativeError(const std::vector<float>& actual, const std::vector<float>& expected)
{
    EXPECT_EQ(actual.size(), expected.size());
    double difference = 0, scale = 0;
    for (std::size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
        difference = std::max(difference, std::abs(static_cast<double>(actual[i]) - expected[i]));
        scale = std::max(scale, std::abs(static_cast<double>(expected[i])));
    }
    return scale > 0 ? difference / scale : difference;
}

// The loss of a batch's logits; writes dlogits in the logits' dtype.
using BatchLoss = std::function<float(Backend&, const Tensor& logits, Tensor& dlogits)>;

// Classification: softmax cross-entropy against `labels` (class indices as floats).
inline BatchLoss crossEntropy(const Tensor& labels)
{
    return [labels](Backend& backend, const Tensor& logits, Tensor& dlogits) {
        return backend.softmaxCrossEntropy(logits, labels, 1.0f, &dlogits).meanLoss;
    };
}

// `steps` plain SGD steps on one batch; the loss before each.
inline std::vector<float> sgdLosses(const CompiledOnnx& compiled, Backend& backend, const Tensor& x,
                                    const BatchLoss& loss, int steps, float learningRate)
{
    const std::vector<Parameter*> parameters = compiled.graph->parametersInBackwardOrder();
    std::vector<float> losses;
    for (int step = 0; step < steps; ++step) {
        PassState pass{backend};
        pass.step = static_cast<std::uint64_t>(step);
        GraphForward forward = compiled.graph->forward(pass, x);
        Tensor dlogits = backend.empty(forward.output.shape(), forward.output.dtype());
        losses.push_back(loss(backend, forward.output, dlogits));
        compiled.graph->backward(pass, dlogits, forward, false);
        for (Parameter* p : parameters) {
            const std::vector<float> gradient = p->grad.toFloats();
            std::vector<float> master = p->master.toFloats();
            for (std::size_t i = 0; i < master.size(); ++i)
                master[i] -= learningRate * gradient[i];
            backend.upload(master.data(), p->master);
            if (p->working.dtype() != p->master.dtype())
                backend.cast(p->master, p->working);
        }
    }
    return losses;
}

// The test name of a precision mode ("mixed_bf16": gtest names take no '-').
inline std::string modeTestName(const testing::TestParamInfo<PrecisionMode>& info)
{
    std::string name(enumKey(info.param));
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
}

} // namespace mantissa::onnx_import::fixtures
