#include "engine/data/data_fingerprint.h"

#include "engine/data/dataset.h"

#include <algorithm>
#include <cstring>

namespace mantissa {

namespace {

// splitmix64's finaliser: every input bit reaches every output bit.
std::uint64_t mix(std::uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

} // namespace

void DataFingerprint::addWord(std::uint64_t word)
{
    m_state = (m_state ^ mix(word + m_length)) * 0x9e3779b97f4a7c15ull;
    m_state ^= m_state >> 29;
    ++m_length;
}

void DataFingerprint::addBytes(const void* data, std::size_t size)
{
    const auto* p = static_cast<const unsigned char*>(data);
    std::size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        std::uint64_t word;
        std::memcpy(&word, p + i, 8);
        addWord(word);
    }
    std::uint64_t tail = 0;
    std::memcpy(&tail, p + i, size - i);
    addWord(tail ^ (static_cast<std::uint64_t>(size) << 56)); // the length tells "a" from "a\0"
}

void DataFingerprint::addText(std::string_view text) { addBytes(text.data(), text.size()); }

void DataFingerprint::addNumber(double value)
{
    std::uint64_t bits;
    std::memcpy(&bits, &value, 8);
    addWord(bits);
}

void DataFingerprint::addDataset(const Dataset& data)
{
    for (std::int64_t d : data.sampleShape.dims())
        addNumber(static_cast<double>(d));
    addText("|");
    for (std::int64_t d : data.labelShape.dims())
        addNumber(static_cast<double>(d));
    addNumber(static_cast<double>(data.classes));
    addBytes(data.inputs.data(), data.inputs.size() * sizeof(float));
    addBytes(data.labels.data(), data.labels.size() * sizeof(float));
}

DataFingerprint DataFingerprint::resumed(State state)
{
    DataFingerprint hash;
    hash.m_state = state.state;
    hash.m_length = state.length;
    return hash;
}

std::string DataFingerprint::hex() const
{
    static const char digits[] = "0123456789abcdef";
    const std::uint64_t h = mix(m_state ^ m_length);
    std::string out(16, '0');
    for (int i = 0; i < 16; ++i)
        out[static_cast<std::size_t>(i)] = digits[(h >> (60 - 4 * i)) & 15];
    return out;
}

std::string dataMismatchWarning(const std::vector<FingerprintedRun>& runs)
{
    // The fingerprints in order of first appearance, each with the runs that saw it.
    std::vector<std::pair<std::string, std::vector<std::string>>> groups;
    for (const FingerprintedRun& run : runs) {
        if (run.fingerprint.empty())
            continue;
        auto group =
            std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == run.fingerprint; });
        if (group == groups.end())
            groups.push_back({run.fingerprint, {run.name}});
        else
            group->second.push_back(run.name);
    }
    if (groups.size() < 2)
        return {};
    std::string text = "these runs did not see the same data, so their results are not comparable as they stand: ";
    for (std::size_t g = 0; g < groups.size(); ++g) {
        std::string names;
        for (std::size_t i = 0; i < groups[g].second.size(); ++i)
            names += (i ? ", " : "") + groups[g].second[i];
        text += (g ? "; " : "") + names + " saw data fingerprint " + groups[g].first;
    }
    return text + " (mantissa-cli data PATH prints a dataset's fingerprint)";
}

} // namespace mantissa
