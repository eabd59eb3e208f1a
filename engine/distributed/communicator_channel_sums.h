#pragma once
// How synchronised batch norm's per-channel sums reach the other ranks: the backend's
// CrossRankSum over the run's Communicator (an fp32 sum in rank order, so every rank gets the
// same bits and keeps the same running statistics). Its time counts as all-reduce time, so the
// rank throughput's all-reduce share includes what synchronising batch norm costs.
#include "engine/backend/backend.h"
#include "engine/distributed/communicator.h"

#include <chrono>

namespace mantissa {

class CommunicatorChannelSums final : public CrossRankSum {
public:
    // `seconds` is the owner's all-reduce time, which each sum adds to.
    CommunicatorChannelSums(Communicator& communicator, double& seconds) : m_comm(communicator), m_seconds(seconds) {}

    void sum(std::span<float> values) override
    {
        const auto start = std::chrono::steady_clock::now();
        m_comm.sumFloats(values);
        m_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }

private:
    Communicator& m_comm;
    double& m_seconds;
};

} // namespace mantissa
