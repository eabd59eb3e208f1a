#pragma once
// A communicator of one rank (tests and benchmarks): every collective of a world of one leaves the values as they are
// (a sum or MAX over one rank is that rank's value), which is exactly what MPI does at
// `mpirun -np 1`. Lets the tests drive DataParallel, the host average and the rank agreements
// in a plain test process, where MPI must not be initialised.
#include "engine/distributed/communicator.h"

#include <cstdlib>

namespace mantissa {

class OneRankCommunicator final : public Communicator {
public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    std::string description() const override { return "one rank, no MPI"; }
    void sumFloats(std::span<float>) override {}
    void sumWords(std::span<std::uint16_t>, DType) override {}
    void sumDoubles(std::span<double>) override {}
    void maxDoubles(std::span<double>) override {}
    void broadcast(std::string&, int) override {}
    [[noreturn]] void abortJob(int code) override { std::_Exit(code); }
};

} // namespace mantissa
