#pragma once
// Data parallelism for the Trainer: one replica per rank, each global batch split into equal
// contiguous slices, gradients averaged across ranks before the finite check and the optimizer
// (docs/distributed.md). What every rank must agree on for the replicas to stay identical is
// agreed here: the config (checked at start), the step's skip flag, its loss scale (asserted
// equal every step) and a stop request.
//
// The sum runs through MPI on the host (gradients downloaded and uploaded) or, on GPUs with
// NCCL, on the device (distributed/all_reduce_path.h); both have the rounding points of
// distributed/host_average.h. Where the average is taken follows distributed.allreduce_dtype:
//  - compute: the raw (loss-scaled) gradients, in their own 16-bit type, before unscaling, every
//    partial sum rounded; the finite check then sees what the sum did (overflow is real);
//  - fp32: each rank unscales and checks its own gradients into fp32, and the fp32 gradients are
//    averaged; the skip flag is the MAX of the ranks' flags.
// distributed.reduction divides by N before or after the sum, or by sqrt(N) at both ends.
#include "engine/backend/backend.h"
#include "engine/backend/device_all_reduce.h"
#include "engine/config/run_config.h"
#include "engine/data/batch_loader.h"
#include "engine/distributed/communicator.h"
#include "engine/distributed/communicator_channel_sums.h"
#include "engine/observe/rank_throughput.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace mantissa {

// distributed.world_size against the launch: 0 becomes `launchedRanks` when that is more than
// one; a different N is a ConfigError naming both.
void resolveWorldSize(RunConfig& config, int launchedRanks);

// "MPI on host (Open MPI v4.1.4)": the all-reduce path every data-parallel run starts with.
std::string hostAllReduceDescription(const Communicator& communicator);

// What the all-reduces did to the 16-bit values, of one step or summed over the run's steps
// (rank 0's view: every rank holds the same sums).
struct AllReduceCounts {
    std::int64_t flushedByDivision = 0;     // nonzero values rounded to zero by the division before the sum
    std::int64_t overflowedInSum = 0;       // finite on every rank, non-finite after the sum
    std::int64_t stepsSkippedByOneRank = 0; // skipped though only some ranks had a non-finite value
};

class DataParallel {
public:
    // Checks that every rank runs the same config (a DistributedError naming the first field
    // that differs, on every rank) and that training.batch_size divides by the world size
    // (ConfigError). Collective: every rank must construct it.
    DataParallel(Communicator& communicator, const RunConfig& config);

    int rank() const { return m_comm.rank(); }
    int worldSize() const { return m_comm.size(); }
    Communicator& communicator() { return m_comm; }

    // What a training pass's batch-norm layers sum their statistics through
    // (PassState::batchNormAcrossRanks): set under distributed.batch_norm synchronised, null
    // per rank.
    CrossRankSum* batchNormSums() { return m_batchNormSums ? &*m_batchNormSums : nullptr; }
    // Keeps this rank's contiguous slice of a global batch.
    void takeSlice(HostBatch& batch) const;
    // True: gradients are averaged in their own type before unscaling (allreduce_dtype compute).
    bool reducesBeforeUnscale() const { return m_spec.allReduceType == AllReduceType::Compute; }
    // Averages `tensors` across ranks in place, in `type` (F32, or the 16-bit type they hold):
    // on the device when useDeviceAllReduce gave a device all-reduce, else through the host.
    void averageGradients(Backend& backend, std::span<Tensor* const> tensors, DType type);
    // Sums on the device from now on (NCCL; distributed/all_reduce_path connects it on every
    // rank or on none), or on the host when `device` is null; `description` says which and why
    // in the run's record.
    void useDeviceAllReduce(std::unique_ptr<DeviceAllReduce> device, std::string description);
    // "NCCL 2.28.9 on device", "MPI on host (Open MPI v4.1.4): the CPU backend's gradients are in
    // host memory": where the gradients are summed, and why there.
    const std::string& allReducePath() const { return m_allReducePath; }
    bool allReducesOnDevice() const { return m_device != nullptr; }
    // After unscaleAndCheckFinite: the step's record made the same on every rank (mean loss,
    // summed correct count, skip flag and first non-finite tensor as MAX) and the loss scale
    // checked equal (DistributedError otherwise). Returns whether any rank asked to stop
    // (`stopAsked` on one of them): the same answer on every rank.
    bool agreeOnStep(Backend& backend, StepScalars& scalars, bool stopAsked);
    // Which ranks had a non-finite loss or gradient of their own in the last agreed step
    // ("rank 1 of 2", "none: the 16-bit sum overflowed"), for its overflow event.
    std::string lastOverflowRanks() const;
    // The lowest of those ranks, -1 when none had a non-finite value of its own.
    int lastFirstNonFiniteRank() const { return m_lastNonFiniteRanks.empty() ? -1 : m_lastNonFiniteRanks.front(); }
    // Over the run so far.
    const AllReduceCounts& counts() const { return m_counts; }
    // Of the last agreed step alone (agreeOnStep closes a step).
    const AllReduceCounts& lastStepCounts() const { return m_lastStepCounts; }
    // Seconds this rank spent in all-reduces (waiting for the others included).
    double allReduceSeconds() const { return m_allReduceSeconds; }
    // Collective: the largest relative difference between the ranks' values of `buffers` (the
    // batch-norm running statistics), 0 when every rank holds the same values. Per-rank batch
    // norm lets them drift apart; synchronised batch norm must keep them equal.
    double buffersSpread(Backend& backend, std::span<Tensor* const> buffers);
    // Collective: every rank's training seconds and all-reduce seconds, in rank order, for the
    // run record (run_ranks) and the finished event's line (describeRankThroughput).
    std::vector<RankThroughput> gatherRankThroughput(double trainSeconds, std::int64_t globalSamples);
    // "2 ranks (Open MPI v4.1.4); all-reduce: NCCL 2.28.9 on device; rank 0: 812 samples/s,
    // all-reduce 14% of its step time; rank 1: ...".
    std::string describeRankThroughput(const std::vector<RankThroughput>& ranks) const;

private:
    Communicator& m_comm;
    DistributedSpec m_spec;
    std::string m_allReducePath;
    std::unique_ptr<DeviceAllReduce> m_device; // null: the host path (download, MPI, upload)
    std::vector<float> m_flat;                 // the gradients of one host all-reduce, packed
    bool m_localNonFinite = false;             // this rank's own gradients before the sum
    float m_reducedAmax = 0;                   // largest |averaged fp32 gradient| (fp32 all-reduce)
    bool m_reducedFp32 = false;
    std::vector<int> m_lastNonFiniteRanks;
    AllReduceCounts m_counts;
    AllReduceCounts m_stepCounts;     // of the step being reduced
    AllReduceCounts m_lastStepCounts; // of the last agreed step
    double m_allReduceSeconds = 0;
    std::optional<CommunicatorChannelSums> m_batchNormSums; // adds to m_allReduceSeconds
};

} // namespace mantissa
