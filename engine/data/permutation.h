#pragma once
// Seeded permutations that are the same on every platform and standard library: the engine
// is std::mt19937_64 (fully specified) seeded through std::seed_seq (fully specified), and the
// shuffle is our own Fisher-Yates, because std::shuffle and std::uniform_int_distribution
// are implementation-defined and would change batch orders between libstdc++ and libc++.
#include <cstdint>
#include <initializer_list>
#include <random>
#include <vector>

namespace mantissa {

// An engine seeded from every word of `key` (e.g. {seed, epoch}); different keys, including
// keys of different lengths, give independent streams.
std::mt19937_64 seededEngine(std::initializer_list<std::uint64_t> key);

// Unbiased integer in [0, bound) (bound > 0), by rejection.
std::uint64_t uniformBelow(std::mt19937_64& engine, std::uint64_t bound);

// 0..n-1 in an order fixed by `key`.
std::vector<std::int64_t> seededPermutation(std::int64_t n, std::initializer_list<std::uint64_t> key);

} // namespace mantissa
