// NCHW <-> nChw16c moves (channel_blocks.h) against the layout's definition: value (n, c, p)
// of the NCHW tensor sits at ((n * C/16 + c/16) * P + p) * 16 + c % 16 in the blocked one, bit
// for bit, for 16- and 32-bit values, pixel counts that leave a partial tile, and back; on the
// AVX-512 tiles where the CPU has them and on the portable path (allowAvx512Conversions).
#include "engine/backend/cpu/channel_blocks.h"
#include "engine/numerics/conversions.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using namespace mantissa::cpu;

namespace {

template <typename T>
void checkMoves(std::int64_t n, std::int64_t channels, std::int64_t pixels)
{
    std::vector<T> nchw(static_cast<std::size_t>(n * channels * pixels));
    for (std::size_t i = 0; i < nchw.size(); ++i)
        nchw[i] = static_cast<T>(i * 2654435761u >> 3); // every value distinct in its tile
    std::vector<T> blocked(nchw.size()), back(nchw.size());
    toChannelBlocks(nchw.data(), blocked.data(), n, channels, pixels, sizeof(T));
    for (std::int64_t s = 0; s < n; ++s)
        for (std::int64_t c = 0; c < channels; ++c)
            for (std::int64_t p = 0; p < pixels; ++p)
                ASSERT_EQ(
                    blocked[static_cast<std::size_t>(((s * (channels / 16) + c / 16) * pixels + p) * 16 + c % 16)],
                    nchw[static_cast<std::size_t>((s * channels + c) * pixels + p)])
                    << "sample " << s << " channel " << c << " pixel " << p;
    fromChannelBlocks(blocked.data(), back.data(), n, channels, pixels, sizeof(T));
    EXPECT_EQ(back, nchw);
}

} // namespace

TEST(ChannelBlocks, SixteenBitValuesMoveToTheirBlockedPlaceAndBack)
{
    checkMoves<std::uint16_t>(3, 32, 28 * 28); // whole tiles
    checkMoves<std::uint16_t>(2, 64, 197);     // a partial tile of 5 pixels
    checkMoves<std::uint16_t>(1, 16, 7);       // no whole tile
}

TEST(ChannelBlocks, ThirtyTwoBitValuesMoveToTheirBlockedPlaceAndBack)
{
    checkMoves<std::uint32_t>(3, 32, 28 * 28);
    checkMoves<std::uint32_t>(2, 48, 197);
    checkMoves<std::uint32_t>(1, 16, 7);
}

TEST(ChannelBlocks, LargeTensorsSplitAcrossThreadsTheSameWay) { checkMoves<std::uint16_t>(128, 32, 14 * 14); }

TEST(ChannelBlocks, ThePortablePathMovesTheSameWay)
{
    const bool previous = mantissa::allowAvx512Conversions(false);
    checkMoves<std::uint16_t>(2, 32, 197);
    checkMoves<std::uint32_t>(2, 32, 197);
    mantissa::allowAvx512Conversions(previous);
}

TEST(ChannelBlocks, OnlyWholeBlocksOfChannelsApply)
{
    EXPECT_TRUE(channelBlocksApply(16));
    EXPECT_TRUE(channelBlocksApply(64));
    EXPECT_FALSE(channelBlocksApply(8));
    EXPECT_FALSE(channelBlocksApply(24));
    EXPECT_FALSE(channelBlocksApply(0));
}
