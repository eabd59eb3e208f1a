#include "engine/lens/scaler_replay.h"

#include "engine/precision/loss_scaler.h"

#include <algorithm>
#include <cmath>

namespace mantissa {

std::vector<ScalerPolicy> standardScalerPolicies()
{
    LossScaleSpec pytorch;
    pytorch.type = LossScaleType::Dynamic;
    pytorch.initial = 65536;
    pytorch.growthFactor = 2;
    pytorch.backoffFactor = 0.5f;
    pytorch.growthInterval = 2000;
    pytorch.hysteresis = 1;
    LossScaleSpec deepspeed = pytorch;
    deepspeed.growthInterval = 1000;
    deepspeed.hysteresis = 2;
    // DeepSpeed's min_loss_scale default is 1; PyTorch has no floor.
    deepspeed.minScale = 1;
    LossScaleSpec static128;
    static128.type = LossScaleType::Static;
    static128.value = 128;
    LossScaleSpec static512 = static128;
    static512.value = 512;
    return {{"pytorch", pytorch}, {"deepspeed", deepspeed}, {"static 128", static128}, {"static 512", static512}};
}

ReplayResult replayScaler(const std::vector<float>& gradAmax, const ScalerPolicy& policy, float overflowAt)
{
    // The mode only resolves "auto"; the policies here name their type.
    LossScaler scaler(policy.spec, PrecisionMode::MixedFp16);
    ReplayResult r;
    r.policy = policy.name;
    r.scales.reserve(gradAmax.size());
    r.minScale = scaler.scale();
    for (float amax : gradAmax) {
        const float scale = scaler.scale();
        r.scales.push_back(scale);
        r.minScale = std::min(r.minScale, scale);
        const bool overflow = !std::isfinite(amax) || double(amax) * double(scale) >= double(overflowAt);
        r.skippedSteps += overflow;
        scaler.update(overflow);
    }
    r.finalScale = scaler.scale();
    return r;
}

} // namespace mantissa
