#pragma once
// A content hash of the data a run trains and is tested on, and of how it was prepared, so that
// runs can be told apart when they did not see the same data. Not cryptographic: it tells
// datasets apart, it does not defend against someone forging a collision.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mantissa {

struct Dataset;

// A run named for messages, with the fingerprint of the data it saw ("" when not known).
struct FingerprintedRun {
    std::string name, fingerprint;
};

// The warning a comparison gives when its runs did not see the same data: "mlp-fp32-1 and
// mlp-bf16-2 did not see the same data (fingerprint 1a2b... vs 3c4d...): ...", naming each
// fingerprint and the runs that saw it; empty when every run that knows its fingerprint
// has the same one (runs recorded before fingerprints were stored are left out).
std::string dataMismatchWarning(const std::vector<FingerprintedRun>& runs);

class DataFingerprint {
public:
    void addBytes(const void* data, std::size_t size);
    void addText(std::string_view text);
    void addNumber(double value);
    // Its shape, labels' shape, class count and every input and label value.
    void addDataset(const Dataset& data);
    // 16 hex digits.
    std::string hex() const;

    // Where the hash stands, so that it can be stored (the decoded-data cache keeps the hash of
    // the data it holds) and carried on later with the settings of another load.
    struct State {
        std::uint64_t state = 0, length = 0;
    };
    State state() const { return {m_state, m_length}; }
    static DataFingerprint resumed(State state);

private:
    void addWord(std::uint64_t word);
    std::uint64_t m_state = 0x6d616e7469737361ull; // "mantissa"
    std::uint64_t m_length = 0;
};

} // namespace mantissa
