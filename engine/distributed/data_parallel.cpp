#include "engine/distributed/data_parallel.h"

#include "engine/backend/step_scalars.h"
#include "engine/distributed/host_average.h"
#include "engine/distributed/rank_agreement.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

namespace mantissa {

namespace {

using Clock = std::chrono::steady_clock;

// "/optimizer/lr" -> "optimizer.lr", "/model/layers/2/units" -> "model.layers[2].units".
std::string fieldName(const std::string& pointer)
{
    std::string name;
    std::size_t at = 1;
    while (at <= pointer.size()) {
        const std::size_t next = std::min(pointer.find('/', at), pointer.size());
        const std::string part = pointer.substr(at, next - at);
        if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
            name += "[" + part + "]";
        else
            name += (name.empty() ? "" : ".") + part;
        at = next + 1;
    }
    return name;
}

// The first field in which `mine` differs from rank 0's config, as a sentence; empty when equal.
std::string configDifference(const std::string& rank0Json, const std::string& mineJson, int rank)
{
    if (rank0Json == mineJson)
        return {};
    const nlohmann::json rank0 = nlohmann::json::parse(rank0Json);
    const nlohmann::json mine = nlohmann::json::parse(mineJson);
    const nlohmann::json patch = nlohmann::json::diff(rank0, mine);
    if (patch.empty())
        return {};
    const std::string pointer = patch[0]["path"].get<std::string>();
    const nlohmann::json::json_pointer where(pointer);
    const std::string here = mine.contains(where) ? mine.at(where).dump() : "(not set)";
    const std::string there = rank0.contains(where) ? rank0.at(where).dump() : "(not set)";
    return "rank " + std::to_string(rank) + "'s config differs from rank 0's at " + fieldName(pointer) + ": " + here +
           " on rank " + std::to_string(rank) + ", " + there +
           " on rank 0; every rank must train the same config (same file and options)";
}

} // namespace

std::string hostAllReduceDescription(const Communicator& communicator)
{
    return "MPI on host (" + communicator.description() + ")";
}

void resolveWorldSize(RunConfig& config, int launchedRanks)
{
    const int asked = config.distributed.worldSize;
    if (asked == 0) {
        if (launchedRanks > 1)
            config.distributed.worldSize = launchedRanks; // recorded with the run
        return;
    }
    if (asked == launchedRanks)
        return;
    throw ConfigError("distributed.world_size is " + std::to_string(asked) + " but " +
                      (launchedRanks == 1 ? std::string("this is a single process, not started by mpirun or srun")
                                          : "the launch started " + std::to_string(launchedRanks) + " ranks") +
                      "; launch with mpirun -np " + std::to_string(asked) +
                      " or set distributed.world_size to 0 (as launched)");
}

DataParallel::DataParallel(Communicator& communicator, const RunConfig& config)
    : m_comm(communicator), m_spec(config.distributed), m_allReducePath(hostAllReduceDescription(communicator))
{
    // Rank 0's config against everyone's: the first rank that differs explains it to all.
    const std::string mine = runConfigToJson(config, -1);
    std::string rank0 = mine;
    m_comm.broadcast(rank0, 0);
    failTogether(m_comm, configDifference(rank0, mine, rank()));
    const std::int64_t batch = config.training.batchSize;
    if (batch % worldSize() != 0)
        throw ConfigError("training.batch_size " + std::to_string(batch) + " is not divisible by the world size " +
                          std::to_string(worldSize()) +
                          ": every rank takes an equal slice of each global batch; use a multiple of " +
                          std::to_string(worldSize()));
    if (m_spec.batchNorm == BatchNormSync::Synchronised)
        m_batchNormSums.emplace(m_comm, m_allReduceSeconds);
}

void DataParallel::takeSlice(HostBatch& batch) const
{
    const std::int64_t n = worldSize();
    MANTISSA_ASSERT(batch.size % n == 0); // the loader drops the partial batch; the size divides
    const std::int64_t slice = batch.size / n, first = slice * rank();
    const auto keep = [&](std::vector<float>& values) {
        const std::size_t perSample = values.size() / static_cast<std::size_t>(batch.size);
        const auto begin = values.begin() + static_cast<std::ptrdiff_t>(perSample * first);
        std::copy(begin, begin + static_cast<std::ptrdiff_t>(perSample * slice), values.begin());
        values.resize(perSample * static_cast<std::size_t>(slice));
    };
    keep(batch.inputs);
    keep(batch.labels);
    batch.size = slice;
    std::vector<std::int64_t> dims = batch.inputShape.dims();
    dims[0] = slice;
    batch.inputShape = Shape(dims);
}

void DataParallel::averageGradients(Backend& backend, std::span<Tensor* const> tensors, DType type)
{
    const auto start = Clock::now();
    const AllReduceDivisors divisors = reductionDivisors(m_spec.reduction, worldSize());
    AllReduceOutcome outcome;
    if (m_device) {
        outcome = m_device->average(tensors, type, divisors);
    } else {
        std::size_t total = 0;
        for (const Tensor* t : tensors)
            total += static_cast<std::size_t>(t->numel());
        m_flat.resize(total);
        std::size_t offset = 0;
        for (const Tensor* t : tensors) {
            backend.download(*t, m_flat.data() + offset); // exact: every dtype widens to fp32 exactly
            offset += static_cast<std::size_t>(t->numel());
        }
        outcome = averageOnHost(m_comm, m_flat, type, divisors);
        offset = 0;
        for (Tensor* t : tensors) {
            backend.upload(m_flat.data() + offset, *t);
            offset += static_cast<std::size_t>(t->numel());
        }
    }
    m_localNonFinite = m_localNonFinite || outcome.localNonFinite;
    // Rank 0 counts for the run; every rank holds the same sums, so the same counts.
    m_stepCounts.flushedByDivision += outcome.flushedByDivision;
    m_stepCounts.overflowedInSum += outcome.overflowedInSum;
    if (type == DType::F32) {
        m_reducedFp32 = true;
        m_reducedAmax = std::max(m_reducedAmax, outcome.amax);
    }
    m_allReduceSeconds += std::chrono::duration<double>(Clock::now() - start).count();
}

void DataParallel::useDeviceAllReduce(std::unique_ptr<DeviceAllReduce> device, std::string description)
{
    m_device = std::move(device);
    m_allReducePath = std::move(description);
}

double DataParallel::buffersSpread(Backend& backend, std::span<Tensor* const> buffers)
{
    std::vector<float> values;
    for (const Tensor* t : buffers) {
        const std::size_t at = values.size();
        values.resize(at + static_cast<std::size_t>(t->numel()));
        backend.download(*t, values.data() + at);
    }
    // Each value's largest and (negated) smallest across ranks, in one MAX.
    std::vector<double> extremes(2 * values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        extremes[i] = values[i];
        extremes[values.size() + i] = -static_cast<double>(values[i]);
    }
    m_comm.maxDoubles(extremes);
    double spread = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
        const double high = extremes[i], low = -extremes[values.size() + i];
        if (high != low)
            spread = std::max(spread, (high - low) / std::max(std::fabs(high), std::fabs(low)));
    }
    return spread;
}

bool DataParallel::agreeOnStep(Backend& backend, StepScalars& scalars, bool stopAsked)
{
    const auto start = Clock::now();
    float state[kStepStateCount];
    backend.download(scalars.state, state);
    const float loss = state[slot(StepState::Loss)];
    const bool localSkip = state[slot(StepState::Skipped)] != 0.0f;
    const bool localNonFinite = m_localNonFinite || !std::isfinite(loss) || (localSkip && !reducesBeforeUnscale());
    const int n = worldSize();

    // Sums: the loss, the correct count, and which ranks had non-finite values of their own.
    std::vector<double> sums(2 + static_cast<std::size_t>(n), 0.0);
    sums[0] = loss;
    sums[1] = state[slot(StepState::Correct)];
    sums[2 + static_cast<std::size_t>(rank())] = localNonFinite ? 1.0 : 0.0;
    m_comm.sumDoubles(sums);
    const float scale = state[slot(StepState::LossScale)];
    std::vector<double> maxima{state[slot(StepState::Skipped)], state[slot(StepState::FirstNonFinite)], scale, -scale,
                               stopAsked ? 1.0 : 0.0};
    m_comm.maxDoubles(maxima);
    // Every rank applies the same rule to the same skip flags, so the scales cannot drift; if
    // they ever did, the replicas would be training different models.
    if (maxima[2] != -maxima[3])
        throw DistributedError("the loss scale differs across ranks (from " + std::to_string(-maxima[3]) + " to " +
                               std::to_string(maxima[2]) + "): the replicas no longer take the same step");

    state[slot(StepState::Loss)] = static_cast<float>(sums[0] / n);
    state[slot(StepState::Correct)] = static_cast<float>(sums[1]);
    const bool skipped = maxima[0] != 0.0;
    state[slot(StepState::Skipped)] = skipped ? 1.0f : 0.0f;
    state[slot(StepState::FirstNonFinite)] = static_cast<float>(maxima[1]);
    if (m_reducedFp32)
        state[slot(StepState::GradAmax)] = skipped ? INFINITY : m_reducedAmax;
    backend.upload(state, scalars.state);

    m_lastNonFiniteRanks.clear();
    for (int r = 0; r < n; ++r)
        if (sums[2 + static_cast<std::size_t>(r)] != 0.0)
            m_lastNonFiniteRanks.push_back(r);
    if (skipped && !m_lastNonFiniteRanks.empty() && static_cast<int>(m_lastNonFiniteRanks.size()) < n)
        ++m_stepCounts.stepsSkippedByOneRank;
    // The step is closed: its counts join the run's.
    m_counts.flushedByDivision += m_stepCounts.flushedByDivision;
    m_counts.overflowedInSum += m_stepCounts.overflowedInSum;
    m_counts.stepsSkippedByOneRank += m_stepCounts.stepsSkippedByOneRank;
    m_lastStepCounts = std::exchange(m_stepCounts, AllReduceCounts{});
    m_localNonFinite = false;
    m_reducedFp32 = false;
    m_reducedAmax = 0;
    m_allReduceSeconds += std::chrono::duration<double>(Clock::now() - start).count();
    return maxima[4] != 0.0;
}

std::string DataParallel::lastOverflowRanks() const
{
    const std::string of = " of " + std::to_string(worldSize());
    if (m_lastNonFiniteRanks.empty())
        return "no rank had a non-finite value of its own: the all-reduce's 16-bit sum overflowed; every rank "
               "skipped the step";
    std::string ranks;
    for (std::size_t i = 0; i < m_lastNonFiniteRanks.size(); ++i)
        ranks += (i ? ", " : "") + std::to_string(m_lastNonFiniteRanks[i]);
    const bool alone = static_cast<int>(m_lastNonFiniteRanks.size()) < worldSize();
    return (m_lastNonFiniteRanks.size() == 1 ? "rank " : "ranks ") + ranks + of +
           " had non-finite values before the all-reduce" +
           (alone ? " (first: rank " + std::to_string(m_lastNonFiniteRanks.front()) + "); every rank skipped the step"
                  : "");
}

std::vector<RankThroughput> DataParallel::gatherRankThroughput(double trainSeconds, std::int64_t globalSamples)
{
    const std::size_t n = static_cast<std::size_t>(worldSize());
    std::vector<double> times(2 * n, 0.0);
    times[static_cast<std::size_t>(rank())] = trainSeconds;
    times[n + static_cast<std::size_t>(rank())] = m_allReduceSeconds;
    m_comm.sumDoubles(times);
    const double perRank = static_cast<double>(globalSamples) / static_cast<double>(n);
    std::vector<RankThroughput> ranks(n);
    for (std::size_t r = 0; r < n; ++r) {
        ranks[r].rank = static_cast<int>(r);
        ranks[r].trainSeconds = times[r];
        ranks[r].samplesPerSecond = times[r] > 0 ? perRank / times[r] : 0.0;
        ranks[r].allReduceSeconds = times[n + r];
    }
    return ranks;
}

std::string DataParallel::describeRankThroughput(const std::vector<RankThroughput>& ranks) const
{
    return std::to_string(ranks.size()) + " ranks (" + m_comm.description() + "); all-reduce: " + m_allReducePath +
           "; " + describeRanks(ranks);
}

} // namespace mantissa
