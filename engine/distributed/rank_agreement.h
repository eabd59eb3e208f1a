#pragma once
// Failing together: a check that can fail on some ranks only (a config that differs, a GPU a
// rank cannot have) must end every rank with the same message, or the ranks that passed would
// wait in their next collective for the ones that left.
#include "engine/distributed/communicator.h"

#include <string>

namespace mantissa {

// Collective. Each rank passes its own failure (empty when it has none); when any rank has
// one, every rank throws a DistributedError with the lowest such rank's message.
void failTogether(Communicator& communicator, std::string failure);

} // namespace mantissa
