#pragma once
// The "device" column of a run: what trained it, precise enough to compare timings
// across machines. The backend names itself ("cpu (OpenBLAS, 8 threads, F16C)"); on the
// CPU the processor model is added, since the backend cannot know it portably.
#include "engine/backend/backend.h"

#include <QString>

namespace mantissa::storage {

QString deviceDescription(const Backend& backend);

} // namespace mantissa::storage
