// The number formats every front end shows: one byte format for the CLI, the reports and the UI.
#include "engine/util/format_number.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace mantissa {
namespace {

TEST(FormatBytes, BinaryUnitsWithOneDecimalAboveBytes)
{
    EXPECT_EQ(formatBytes(0), "0 B");
    EXPECT_EQ(formatBytes(512), "512 B");
    EXPECT_EQ(formatBytes(1023), "1023 B");
    EXPECT_EQ(formatBytes(1024), "1.0 KiB");
    EXPECT_EQ(formatBytes(1536), "1.5 KiB");
    EXPECT_EQ(formatBytes(432537600), "412.5 MiB");
    EXPECT_EQ(formatBytes(1288490189), "1.2 GiB");
    EXPECT_EQ(formatBytes(std::uint64_t{3} << 40), "3.0 TiB");
    EXPECT_EQ(formatBytes(std::uint64_t{5} << 50), "5120.0 TiB"); // no unit past TiB
}

TEST(FormatNumber, ShortestFormWithSixSignificantDigits)
{
    EXPECT_EQ(formatNumber(0.05), "0.05");
    EXPECT_EQ(formatNumber(1e-8), "1e-08");
    EXPECT_EQ(formatNumber(65504), "65504");
}

TEST(FormatNumber, ExactPowersOfTwoOnly)
{
    EXPECT_EQ(exactPowerOfTwo(65536), 16);
    EXPECT_EQ(exactPowerOfTwo(0.5), -1);
    EXPECT_EQ(exactPowerOfTwo(1), 0);
    EXPECT_EQ(exactPowerOfTwo(std::ldexp(1.0, -133)), -133);   // bf16's smallest subnormal
    EXPECT_EQ(exactPowerOfTwo(std::ldexp(1.0, -1074)), -1074); // a double subnormal
    EXPECT_FALSE(exactPowerOfTwo(65504));
    EXPECT_FALSE(exactPowerOfTwo(3));
    EXPECT_FALSE(exactPowerOfTwo(0));
    EXPECT_FALSE(exactPowerOfTwo(-2));
    EXPECT_FALSE(exactPowerOfTwo(std::numeric_limits<double>::infinity()));
    EXPECT_FALSE(exactPowerOfTwo(std::numeric_limits<double>::quiet_NaN()));
}

TEST(FormatDuration, SecondsUnderAMinuteThenClockTime)
{
    EXPECT_EQ(formatDuration(0), "0.00 s");
    EXPECT_EQ(formatDuration(8.424), "8.42 s");
    EXPECT_EQ(formatDuration(42.13), "42.1 s");
    EXPECT_EQ(formatDuration(59.94), "59.9 s");
    EXPECT_EQ(formatDuration(187), "3:07");
    EXPECT_EQ(formatDuration(3599.4), "59:59");
    EXPECT_EQ(formatDuration(3729), "1:02:09");
    EXPECT_EQ(formatDuration(-1), "");
    EXPECT_EQ(formatDuration(std::numeric_limits<double>::quiet_NaN()), "");
    EXPECT_EQ(formatDuration(std::numeric_limits<double>::infinity()), "");
}

TEST(FormatScale, PowersOfTwoNameTheirExponent)
{
    EXPECT_EQ(formatScale(65536), "65536 (2^16)");
    EXPECT_EQ(formatScale(16777216), "16777216 (2^24)");
    EXPECT_EQ(formatScale(0.5), "0.5 (2^-1)");
    EXPECT_EQ(formatScale(1), "1 (2^0)");
    EXPECT_EQ(formatScale(1000), "1000");
    EXPECT_EQ(formatScale(0), "");
    EXPECT_EQ(formatScale(-4), "");
    EXPECT_EQ(formatScale(std::numeric_limits<double>::infinity()), "");
}

} // namespace
} // namespace mantissa
