#include "engine/util/check.h"

#include <cstdio>
#include <cstdlib>

namespace mantissa {

void assertionFailed(const char* expression, const char* file, int line)
{
    std::fprintf(stderr, "mantissa: internal error: assertion '%s' failed at %s:%d\n", expression, file, line);
    std::abort();
}

} // namespace mantissa
