#pragma once
// The error every ONNX import problem a user can cause comes back as. A ConfigError, so that
// each place that already reports a bad model spec reports a bad model file the same way.
#include "engine/util/check.h"

namespace mantissa::onnx_import {

class OnnxImportError : public ConfigError {
public:
    using ConfigError::ConfigError;
};

} // namespace mantissa::onnx_import
