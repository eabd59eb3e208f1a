#include "engine/onnx/gelu_pattern.h"

#include "engine/onnx/node_patterns.h"

#include <cmath>
#include <optional>
#include <vector>

namespace mantissa::onnx_import {

namespace {

class PatternFinder {
public:
    explicit PatternFinder(const OnnxGraph& onnx) : m_patterns(onnx), m_onnx(onnx) {}

    std::optional<std::size_t> soleProducer(const std::string& value, const char* type) const
    {
        return m_patterns.soleProducer(value, type);
    }
    std::optional<std::string> besideConstant(const OnnxNode& node, float value, float tolerance,
                                              bool eitherSide = true) const
    {
        return m_patterns.besideConstant(node, value, tolerance, eitherSide);
    }

    // The GELU ending at node `last`, if it is one: fills the nodes it absorbs and returns x.
    std::optional<std::string> match(std::size_t last, std::vector<std::size_t>& absorbed) const
    {
        const OnnxNode& half = m_onnx.nodes[last];
        if (half.opType != "Mul" || !half.domain.empty())
            return std::nullopt;
        const std::optional<std::string> productValue = besideConstant(half, 0.5f, 0.0f);
        if (!productValue)
            return std::nullopt;
        const std::optional<std::size_t> product = soleProducer(*productValue, "Mul");
        if (!product || m_onnx.nodes[*product].inputs.size() != 2)
            return std::nullopt;
        // x * (1 + erf(...)), either way round.
        for (std::size_t side = 0; side < 2; ++side) {
            const std::string& x = m_onnx.nodes[*product].inputs[side];
            const std::optional<std::size_t> shifted = soleProducer(m_onnx.nodes[*product].inputs[1 - side], "Add");
            if (!shifted)
                continue;
            const std::optional<std::string> erfValue = besideConstant(m_onnx.nodes[*shifted], 1.0f, 0.0f);
            const std::optional<std::size_t> erf = erfValue ? soleProducer(*erfValue, "Erf") : std::nullopt;
            if (!erf || m_onnx.nodes[*erf].inputs.size() != 1)
                continue;
            const std::optional<std::size_t> scaled = scaledInput(m_onnx.nodes[*erf].inputs[0]);
            if (!scaled || m_onnx.nodes[*scaled].inputs.empty() || scaledValue(*scaled) != x)
                continue;
            absorbed = {*scaled, *erf, *shifted, *product};
            return x;
        }
        return std::nullopt;
    }

private:
    // x / sqrt 2 or x * (1 / sqrt 2): the node computing `value`.
    std::optional<std::size_t> scaledInput(const std::string& value) const
    {
        if (const std::optional<std::size_t> div = soleProducer(value, "Div"))
            return div;
        return soleProducer(value, "Mul");
    }

    std::optional<std::string> scaledValue(std::size_t node) const
    {
        const OnnxNode& n = m_onnx.nodes[node];
        const float root2 = static_cast<float>(std::sqrt(2.0));
        // Within a few ulps of the constant: exporters round it to fp32 in their own ways.
        if (n.opType == "Div")
            return besideConstant(n, root2, 4e-7f, false);
        return besideConstant(n, 1.0f / root2, 2e-7f);
    }

    NodePatterns m_patterns;
    const OnnxGraph& m_onnx;
};

} // namespace

GeluPatterns findGeluPatterns(const OnnxGraph& onnx)
{
    GeluPatterns patterns;
    const PatternFinder finder(onnx);
    for (std::size_t i = 0; i < onnx.nodes.size(); ++i) {
        std::vector<std::size_t> absorbed;
        if (const std::optional<std::string> x = finder.match(i, absorbed)) {
            patterns.inputOf[i] = *x;
            patterns.absorbed.insert(absorbed.begin(), absorbed.end());
        }
    }
    return patterns;
}

} // namespace mantissa::onnx_import
