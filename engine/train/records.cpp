#include "engine/train/records.h"

namespace mantissa {

const char* eventKindName(EventKind kind)
{
    switch (kind) {
    case EventKind::Overflow: return "overflow";
    case EventKind::ScaleChange: return "scale_change";
    case EventKind::Divergence: return "divergence";
    case EventKind::Finished: return "finished";
    case EventKind::Error: return "error";
    }
    return "?";
}

} // namespace mantissa
