#pragma once
// The backend the GPU suites hold to the CPU oracle: the CUDA backend, obtained through
// selectBackend exactly as a run obtains it. Where there is none (no CUDA backend in this
// build, no usable GPU) every GPU test skips with selectBackend's reason: a skip, never a pass.
//
// MANTISSA_TEST_DEVICE picks another device ("cuda:1"). "cpu" runs the suites against a
// second, single-threaded CPU backend: on a machine without a GPU that exercises the
// harness itself (and the CPU backend's independence from its thread count).
#include "engine/backend/backend.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace mantissa::test {

class OpRun;

// The device requested: $MANTISSA_TEST_DEVICE, else "cuda".
std::string deviceUnderTestName();

// The CPU backend every GPU result is compared with.
std::unique_ptr<Backend> makeOracle();

// A fixture holding the oracle and the device under test; SetUp skips the test, with the
// reason, when the device is unavailable. Derived fixtures that override SetUp call this
// one first and return if IsSkipped().
class DeviceTest : public ::testing::Test {
protected:
    void SetUp() override;
    Backend& oracle() { return *m_oracle; }
    Backend& device() { return *m_device; }
    // Runs `run` on the oracle and on the device with inputs drawn from the same seed and
    // expects every output it keeps within its tolerance. An op family the device lacks in
    // bf16 (GPUs before Ampere) skips; one it lacks in fp32 or fp16 fails.
    void expectMatchesOracle(Op op, DType type, std::uint32_t seed, const std::function<void(OpRun&, DType)>& run,
                             const std::string& name);

private:
    std::unique_ptr<Backend> m_oracle;
    std::unique_ptr<Backend> m_device;
};

} // namespace mantissa::test
