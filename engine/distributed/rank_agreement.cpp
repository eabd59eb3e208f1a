#include "engine/distributed/rank_agreement.h"

#include <limits>
#include <vector>

namespace mantissa {

void failTogether(Communicator& communicator, std::string failure)
{
    // MAX of -rank finds the lowest failing rank; ranks without a failure bid below any rank.
    constexpr double kNone = -1.0 * std::numeric_limits<int>::max();
    std::vector<double> firstFailing{failure.empty() ? kNone : -communicator.rank()};
    communicator.maxDoubles(firstFailing);
    if (firstFailing[0] == kNone)
        return;
    communicator.broadcast(failure, static_cast<int>(-firstFailing[0]));
    throw DistributedError(failure);
}

} // namespace mantissa
