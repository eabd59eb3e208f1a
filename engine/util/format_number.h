#pragma once
// Numbers as users read them in messages, tables and reports: "0.05", "1e-08" rather than
// std::to_string's "0.050000"; "412.5 MiB" rather than a count of bytes.
#include <cstdint>
#include <optional>
#include <string>

namespace mantissa {

// Shortest form with up to 6 significant digits (printf's %g).
std::string formatNumber(double value);

// Decimal SI prefixes, as FLOPs are counted: "950", "29.312 k", "2.77069 M", "1.2 G" (formatNumber's
// digits, up to T).
std::string formatSi(double value);

// Binary units, as memory is allocated and files are sized: "512 B", "1.5 KiB", "412.5 MiB",
// "1.2 GiB" (one decimal above bytes, up to TiB). The one byte format of every front end.
std::string formatBytes(std::uint64_t bytes);

// A ratio of two measurements (a speedup, a memory ratio), as every front end writes it: two
// decimals and an "x", "1.93x", "0.97x"; "" when it is not a positive finite number.
std::string formatRatio(double ratio);

// A duration as every front end writes it: "8.42 s" and "42.1 s" under a minute, then "3:07"
// (minutes and seconds) and "1:02:09" (hours); "" for a negative or non-finite value, where
// each front end writes its own mark of a value not known.
std::string formatDuration(double seconds);

// A loss scale (or any scale that is mostly a power of two): "65536 (2^16)", "0.5 (2^-1)", or
// up to 8 significant digits where it is not a power of two ("1000"); "" where it is not a
// positive finite number.
std::string formatScale(double scale);

// k when `value` is exactly 2^k (positive and finite), else nothing: the one test behind every
// "2^k" a front end writes (loss scales, format limits, block scales), each in its own layout.
std::optional<int> exactPowerOfTwo(double value);

} // namespace mantissa
