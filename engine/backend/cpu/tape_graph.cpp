// CpuBackend::captureGraph: the step is recorded on a RecordingBackend's tape and replayed
// from it. The CPU has no launch overhead to save; what the tape buys is that the trainer's
// graph path, and every rule a CUDA graph imposes on it, runs and is tested on every machine.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/recording_backend.h"
#include "engine/util/check.h"

namespace mantissa {

namespace {

class TapeGraph final : public StepGraph {
public:
    explicit TapeGraph(std::unique_ptr<RecordingBackend> tape) : m_tape(std::move(tape)) {}
    void replay() override { m_tape->replay(); }

private:
    std::unique_ptr<RecordingBackend> m_tape;
};

} // namespace

std::unique_ptr<StepGraph> CpuBackend::captureGraph(const std::function<void(Backend&)>& body, std::string* why)
{
    auto tape = std::make_unique<RecordingBackend>(*this);
    try {
        body(*tape);
    } catch (const Error& e) {
        if (why)
            *why = e.what();
        return nullptr;
    }
    return std::make_unique<TapeGraph>(std::move(tape));
}

} // namespace mantissa
