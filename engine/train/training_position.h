#pragma once
// Where a run's step loop stands between two steps: what a saved training state resumes from
// (Trainer::saveCheckpoint writes it, Trainer::resumeFrom reads it). Every random draw of a
// run is keyed by its seed with the epoch, the sample or the step (the shuffled order,
// augmentation, dropout, stochastic rounding), and the learning rate is a function of the
// step, so the step and the place in the data order are all the random and schedule state
// there is.
#include <cstdint>

namespace mantissa {

struct TrainingPosition {
    std::int64_t step = 0;       // steps done
    int epoch = 1;               // the epoch the next step belongs to
    std::int64_t batchIndex = 0; // batches of that epoch done: the next one's place in its shuffled order
    // The epoch's running totals so far, so that its record comes out as the uninterrupted run's.
    double epochLoss = 0;
    std::int64_t epochCorrect = 0, epochSamples = 0, finiteSteps = 0;
    int consecutiveSkips = 0; // skipped steps in a row, for the divergence rule
};

} // namespace mantissa
