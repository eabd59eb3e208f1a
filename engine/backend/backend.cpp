#include "engine/backend/backend.h"

#include <cmath>

namespace mantissa {

AdamCorrections adamCorrections(const AdamSettings& s, std::int64_t step)
{
    return {1.0f - std::pow(s.beta1, static_cast<float>(step)), 1.0f - std::pow(s.beta2, static_cast<float>(step))};
}

} // namespace mantissa
