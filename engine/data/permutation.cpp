#include "engine/data/permutation.h"

#include "engine/util/check.h"

#include <numeric>
#include <utility>

namespace mantissa {

std::mt19937_64 seededEngine(std::initializer_list<std::uint64_t> key)
{
    std::vector<std::uint32_t> words;
    words.reserve(2 * key.size());
    for (std::uint64_t k : key) {
        words.push_back(static_cast<std::uint32_t>(k));
        words.push_back(static_cast<std::uint32_t>(k >> 32));
    }
    std::seed_seq seq(words.begin(), words.end());
    return std::mt19937_64(seq);
}

std::uint64_t uniformBelow(std::mt19937_64& engine, std::uint64_t bound)
{
    MANTISSA_ASSERT(bound > 0);
    // Values below `threshold` would make the low residues more likely; 2^64 mod bound of them.
    const std::uint64_t threshold = (0 - bound) % bound;
    for (;;) {
        const std::uint64_t r = engine();
        if (r >= threshold)
            return r % bound;
    }
}

std::vector<std::int64_t> seededPermutation(std::int64_t n, std::initializer_list<std::uint64_t> key)
{
    MANTISSA_ASSERT(n >= 0);
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), std::int64_t{0});
    std::mt19937_64 engine = seededEngine(key);
    for (std::int64_t i = n - 1; i > 0; --i) {
        const auto j = static_cast<std::int64_t>(uniformBelow(engine, static_cast<std::uint64_t>(i) + 1));
        std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
    }
    return order;
}

} // namespace mantissa
