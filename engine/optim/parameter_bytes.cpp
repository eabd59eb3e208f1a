#include "engine/optim/parameter_bytes.h"

#include "engine/optim/optimizer.h"

namespace mantissa {

std::size_t ParameterBytes::total() const
{
    std::size_t bytes = dtypeSize(master) + static_cast<std::size_t>(stateTensors) * dtypeSize(state);
    if (working)
        bytes += dtypeSize(*working);
    if (compensation)
        bytes += dtypeSize(*compensation);
    return bytes;
}

ParameterBytes parameterBytes(const RunConfig& config, LayerPrecision override)
{
    const LayerDTypes d = PrecisionPolicy(config.precision, config.recipe, config.update).layer(override);
    ParameterBytes b;
    b.master = d.master;
    // createParameter shares master's storage exactly when the types match.
    if (d.weight != d.master)
        b.working = d.weight;
    if (hasCompensation(config.update.masters))
        b.compensation = kCompensationDType;
    b.state = d.optimizerState;
    b.stateTensors = Optimizer::stateTensorCount(config.optimizer);
    b.optimizer = config.optimizer.type;
    return b;
}

std::string parameterBytesText(const ParameterBytes& b)
{
    const auto term = [](DType t, const char* what) {
        return std::string(dtypeName(t)) + " " + what + " " + std::to_string(dtypeSize(t));
    };
    std::string text = std::to_string(b.total()) + " bytes: " + term(b.master, "master");
    if (b.working)
        text += " + " + term(*b.working, "working copy");
    if (b.compensation)
        text += " + " + term(*b.compensation, "compensation");
    if (b.stateTensors == 1)
        text += " + " + term(b.state, "momentum");
    else if (b.stateTensors == 2)
        text += " + 2 x " + term(b.state, "moment");
    return text;
}

} // namespace mantissa
