#pragma once
// The "device" column of a run: what trained it, precise enough to compare timings
// across machines. The backend names itself ("cpu (oneDNN 2.6.3 avx512_core_bf16, 2 threads, …)"); on the
// CPU the processor model is added, since the backend cannot know it portably.
#include "engine/backend/backend.h"

#include <QString>

namespace mantissa::storage {

QString deviceDescription(const Backend& backend);

} // namespace mantissa::storage
