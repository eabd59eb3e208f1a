#pragma once
// A content hash of the data a run trains and is tested on, and of how it was prepared, so that
// runs can be told apart when they did not see the same data. Not cryptographic: it tells
// datasets apart, it does not defend against someone forging a collision.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mantissa {

struct Dataset;

class DataFingerprint {
public:
    void addBytes(const void* data, std::size_t size);
    void addText(std::string_view text);
    void addNumber(double value);
    // Its shape, labels' shape, class count and every input and label value.
    void addDataset(const Dataset& data);
    // 16 hex digits.
    std::string hex() const;

private:
    void addWord(std::uint64_t word);
    std::uint64_t m_state = 0x6d616e7469737361ull; // "mantissa"
    std::uint64_t m_length = 0;
};

} // namespace mantissa
