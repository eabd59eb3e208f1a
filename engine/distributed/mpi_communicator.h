#pragma once
// Communicator over MPI (built only when CMake finds MPI). Initialises MPI in its
// constructor and finalises it in its destructor; one per process.
//
// Every collective is non-blocking underneath and waited for in a loop that also watches for
// SIGTERM: when one rank dies, mpirun (and srun) end the others with SIGTERM, and a rank
// blocked in MPI_Allreduce would never notice. Here the wait throws a DistributedError, the
// trainer ends the run as failed and rank 0 records it before the launcher's SIGKILL follows.
#include "engine/distributed/communicator.h"

namespace mantissa {

class MpiCommunicator final : public Communicator {
public:
    MpiCommunicator();
    ~MpiCommunicator() override;
    MpiCommunicator(const MpiCommunicator&) = delete;
    MpiCommunicator& operator=(const MpiCommunicator&) = delete;

    int rank() const override { return m_rank; }
    int size() const override { return m_size; }
    std::string description() const override { return m_description; }
    void sumFloats(std::span<float> values) override;
    void sumWords(std::span<std::uint16_t> words, DType type) override;
    void sumDoubles(std::span<double> values) override;
    void maxDoubles(std::span<double> values) override;
    void broadcast(std::string& text, int root) override;
    std::string interruption() const override;
    [[noreturn]] void abortJob(int code) override;

private:
    int m_rank = 0, m_size = 1;
    std::string m_description;
    bool m_broken = false; // a collective failed: MPI_Finalize would wait for the dead rank
};

} // namespace mantissa
