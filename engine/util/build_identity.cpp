#include "engine/util/build_identity.h"

#include "mantissa_build_commit.h" // generated: MANTISSA_BUILD_COMMIT

namespace mantissa {

const std::string& buildIdentity()
{
    static const std::string identity = std::string(MANTISSA_BUILD_COMMIT).empty()
                                            ? std::string(MANTISSA_VERSION)
                                            : std::string(MANTISSA_VERSION) + "+git." + MANTISSA_BUILD_COMMIT;
    return identity;
}

} // namespace mantissa
