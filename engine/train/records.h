#pragma once
// What leaves the engine while it trains: small plain structs delivered through
// TrainingObserver. Storage and the UI consume exactly these.
#include <cstdint>
#include <string>

namespace mantissa {

struct StepRecord {
    std::int64_t step = 0;          // 1-based optimizer step, counting skipped ones
    int epoch = 0;                  // 1-based
    float loss = 0;                 // unscaled mean training loss of the batch
    float learningRate = 0;
    float lossScale = 1;            // the scale used for this step's backward
    bool skipped = false;           // gradients were non-finite; no update happened
    float gradNorm = 0;             // global L2 norm of unscaled gradients (NaN/inf if skipped)
    float samplesPerSecond = 0;     // this step's throughput
    double elapsedSeconds = 0;      // since the run started, training time only
};

struct EpochRecord {
    int epoch = 0;
    float trainLoss = 0, trainAccuracy = 0; // over the epoch's training steps
    float testLoss = 0, testAccuracy = 0;   // accuracy in [0, 1]
    double wallSeconds = 0;                  // since the run started, evaluation included
};

enum class EventKind : std::uint8_t { Overflow, ScaleChange, Divergence, Finished, Error };

struct EventRecord {
    EventKind kind = EventKind::Overflow;
    std::int64_t step = 0;
    float scaleBefore = 0, scaleAfter = 0; // Overflow and ScaleChange
    std::string parameter;                  // Overflow: first parameter whose gradient was non-finite
    std::string message;                    // Divergence, Finished (status), Error
};

const char* eventKindName(EventKind kind);

class TrainingObserver {
public:
    virtual ~TrainingObserver() = default;
    virtual void onStep(const StepRecord&) {}
    virtual void onEpoch(const EpochRecord&) {}
    virtual void onEvent(const EventRecord&) {}
};

} // namespace mantissa
