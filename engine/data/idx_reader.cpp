#include "engine/data/idx_reader.h"

#include "engine/util/check.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>

namespace mantissa {

namespace {

constexpr std::uint8_t kUnsignedByte = 0x08;

[[noreturn]] void fail(const std::string& path, const std::string& problem) { throw DataError(path + ": " + problem); }

struct GzCloser {
    void operator()(gzFile_s* f) const { gzclose(f); }
};

struct RawContents {
    std::vector<std::uint8_t> bytes;
    bool compressed = false;
    std::string streamError; // zlib's complaint when the stream broke off, else empty
};

// Everything zlib can decompress (or, for a plain file, read) before the end or an error.
// The error is kept rather than thrown so that a truncated file is reported against what its
// header promised, which says more than zlib's "unexpected end of file".
RawContents readAll(const std::string& path)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (!fs::exists(status))
        fail(path, "file not found");
    if (!fs::is_regular_file(status))
        fail(path, "not a regular file");

    std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
    if (!file)
        fail(path, std::string("cannot open: ") + std::strerror(errno));
    gzbuffer(file.get(), 1 << 18);

    RawContents raw;
    constexpr std::size_t chunk = 1 << 20;
    for (;;) {
        const std::size_t used = raw.bytes.size();
        raw.bytes.resize(used + chunk);
        const int got = gzread(file.get(), raw.bytes.data() + used, static_cast<unsigned>(chunk));
        raw.bytes.resize(used + static_cast<std::size_t>(got > 0 ? got : 0));
        if (got <= 0)
            break;
    }
    int zstatus = Z_OK;
    const char* message = gzerror(file.get(), &zstatus);
    if (zstatus != Z_OK && zstatus != Z_STREAM_END) {
        raw.streamError = message ? message : "unknown zlib error";
        // zlib prefixes the path, which our messages already start with.
        if (raw.streamError.starts_with(path + ": "))
            raw.streamError.erase(0, path.size() + 2);
    }
    raw.compressed = gzdirect(file.get()) == 0;
    return raw;
}

std::uint32_t bigEndian32(const std::uint8_t* p)
{
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

std::string hexByte(std::uint8_t b)
{
    static const char digits[] = "0123456789abcdef";
    return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// "60000 images of 28x28", "60000 labels", "5 items of 2x3x4": how the header reads to a user.
std::string describe(const std::vector<std::int64_t>& dims)
{
    // Appends one piece at a time: GCC 12 warns falsely (-Wrestrict) on `"x" + std::string`.
    std::string text = std::to_string(dims[0]);
    text += dims.size() == 3 ? " images" : dims.size() == 1 ? " labels" : " items";
    for (std::size_t i = 1; i < dims.size(); ++i) {
        text += i == 1 ? " of " : "x";
        text += std::to_string(dims[i]);
    }
    return text;
}

std::string gzipNote(const RawContents& raw)
{
    return raw.streamError.empty() ? "" : " (the gzip stream breaks off: " + raw.streamError + ")";
}

} // namespace

IdxArray readIdxFile(const std::string& path, int expectedRank)
{
    RawContents raw = readAll(path);
    const auto& b = raw.bytes;
    if (b.size() < 4) {
        if (raw.compressed && !raw.streamError.empty())
            fail(path, "not a valid gzip file: " + raw.streamError);
        fail(path,
             "truncated: the file ends inside the IDX header (" + std::to_string(b.size()) + " bytes)" + gzipNote(raw));
    }
    if (b[0] != 0 || b[1] != 0)
        fail(path, "not an IDX file: it starts with " + hexByte(b[0]) + " " + hexByte(b[1]) +
                       " where the IDX magic number has two zero bytes" +
                       (raw.streamError.empty() ? "" : " (zlib: " + raw.streamError + ")"));
    if (b[2] != kUnsignedByte)
        fail(path, "unsupported IDX element type " + hexByte(b[2]) + "; only unsigned bytes (0x08) are supported");
    const int rank = b[3];
    if (rank == 0)
        fail(path, "invalid IDX header: rank 0");
    if (expectedRank > 0 && rank != expectedRank)
        fail(path, "expected an IDX file of rank " + std::to_string(expectedRank) +
                       (expectedRank == 3   ? " (images)"
                        : expectedRank == 1 ? " (labels)"
                                            : "") +
                       " but the header has rank " + std::to_string(rank));
    const std::size_t headerBytes = 4 + 4 * static_cast<std::size_t>(rank);
    if (b.size() < headerBytes)
        fail(path, "truncated: the file ends inside the IDX header (" + std::to_string(b.size()) + " of " +
                       std::to_string(headerBytes) + " bytes)" + gzipNote(raw));

    IdxArray out;
    std::uint64_t expected = 1;
    for (int i = 0; i < rank; ++i) {
        const std::uint32_t extent = bigEndian32(b.data() + 4 + 4 * i);
        out.dims.push_back(extent);
        // Four uint32 extents can overflow 64 bits; no real file comes near, a corrupt one might.
        if (extent != 0 && expected > std::numeric_limits<std::uint64_t>::max() / extent)
            fail(path, "invalid IDX header: the extents overflow 64 bits");
        expected *= extent;
    }
    const std::uint64_t held = b.size() - headerBytes;
    if (held < expected)
        fail(path, "truncated: header says " + describe(out.dims) + " (" + std::to_string(expected) +
                       " bytes) but the file holds " + std::to_string(held) + " bytes of data" + gzipNote(raw));
    if (!raw.streamError.empty())
        fail(path, "corrupt gzip stream: " + raw.streamError);
    if (held > expected)
        fail(path, "header says " + describe(out.dims) + " (" + std::to_string(expected) +
                       " bytes) but the file holds " + std::to_string(held) + " bytes of data; " +
                       std::to_string(held - expected) + " bytes are left over");

    out.values = std::move(raw.bytes);
    out.values.erase(out.values.begin(), out.values.begin() + static_cast<std::ptrdiff_t>(headerBytes));
    return out;
}

void checkIdxPair(const IdxArray& images, const std::string& imagesPath, const IdxArray& labels,
                  const std::string& labelsPath, std::int64_t classes)
{
    if (images.count() != labels.count())
        throw DataError(imagesPath + ": holds " + std::to_string(images.count()) + " images but " + labelsPath +
                        " holds " + std::to_string(labels.count()) +
                        " labels; the two files must come from the same split");
    for (std::size_t i = 0; i < labels.values.size(); ++i)
        if (labels.values[i] >= classes)
            fail(labelsPath, "label " + std::to_string(labels.values[i]) + " of sample " + std::to_string(i) +
                                 " is outside 0.." + std::to_string(classes - 1));
}

} // namespace mantissa
