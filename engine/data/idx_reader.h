#pragma once
// Reader for the IDX format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/):
// two zero bytes, a dtype byte, a rank byte, `rank` big-endian uint32 extents, then the
// elements row-major. Files may be gzip-compressed or plain; zlib reads both.
#include <cstdint>
#include <string>
#include <vector>

namespace mantissa {

// The contents of one IDX file of unsigned bytes (dtype 0x08, the only one the datasets use).
struct IdxArray {
    std::vector<std::int64_t> dims;   // outermost first: {60000, 28, 28} for training images
    std::vector<std::uint8_t> values; // product(dims) elements, row-major
    std::int64_t count() const { return dims.empty() ? 0 : dims[0]; }
};

// Reads `path` and checks it completely: the file exists and is a regular file, the gzip
// stream (if any) is intact, the magic and dtype are right, the rank is `expectedRank`
// (3 for images, 1 for labels; 0 accepts any) and the data holds exactly the bytes the
// header promises. Throws DataError naming `path` and the problem.
IdxArray readIdxFile(const std::string& path, int expectedRank = 0);

// Checks that an image file and a label file describe the same number of samples and that
// every label is below `classes`. Throws DataError naming the file at fault.
void checkIdxPair(const IdxArray& images, const std::string& imagesPath, const IdxArray& labels,
                  const std::string& labelsPath, std::int64_t classes);

} // namespace mantissa
