#pragma once
// Two tiers of errors (see docs/architecture.md):
//  - a broken invariant is a bug: MANTISSA_ASSERT aborts with file and line;
//  - an error a user can cause comes back as a typed exception whose message names
//    the object at fault and, where possible, suggests a fix.
#include <stdexcept>
#include <string>

namespace mantissa {

// Base of every error a user can cause; what() is the message shown to them.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class ConfigError : public Error {
    using Error::Error;
}; // bad config / model spec
class DataError : public Error {
    using Error::Error;
}; // missing or corrupt dataset
class ResourceError : public Error {
    using Error::Error;
}; // out of memory, device unusable
class UnsupportedError : public Error {
    using Error::Error;
}; // op/dtype a backend lacks
// A checkpoint refused because a tensor of the model holds non-finite values: writing it would
// hand on weights no one can train from (Trainer::saveCheckpoint).
class NonFiniteCheckpoint : public Error {
public:
    using Error::Error;
};
class IoError : public Error {
    using Error::Error;
}; // checkpoint files and the like

[[noreturn]] void assertionFailed(const char* expression, const char* file, int line);

} // namespace mantissa

#define MANTISSA_ASSERT(cond) ((cond) ? static_cast<void>(0) : ::mantissa::assertionFailed(#cond, __FILE__, __LINE__))
