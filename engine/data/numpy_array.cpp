#include "engine/data/numpy_array.h"

#include "engine/util/check.h"

#include <minizip/unzip.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <type_traits>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mantissa {

namespace {

[[noreturn]] void fail(const std::string& where, const std::string& problem)
{
    throw DataError(where + ": " + problem);
}

std::uint32_t littleEndian(const std::uint8_t* p, int bytes)
{
    std::uint32_t v = 0;
    for (int i = bytes - 1; i >= 0; --i)
        v = (v << 8) | p[i];
    return v;
}

// The text after `'key':` in the header dict, up to the next top-level comma or the closing
// brace; the header is a Python literal that numpy writes in one fixed form.
std::string headerValue(const std::string& header, const std::string& key, const std::string& where)
{
    const std::size_t at = header.find("'" + key + "'");
    if (at == std::string::npos)
        fail(where, "the .npy header has no '" + key + "' entry: " + header);
    std::size_t p = header.find(':', at);
    if (p == std::string::npos)
        fail(where, "the .npy header cannot be read: " + header);
    ++p;
    while (p < header.size() && header[p] == ' ')
        ++p;
    std::size_t end = p;
    if (header[p] == '(') {
        end = header.find(')', p);
        if (end == std::string::npos)
            fail(where, "the .npy header's shape is not closed: " + header);
        return header.substr(p, end + 1 - p);
    }
    if (header[p] == '\'') {
        end = header.find('\'', p + 1);
        if (end == std::string::npos)
            fail(where, "the .npy header cannot be read: " + header);
        return header.substr(p + 1, end - p - 1);
    }
    while (end < header.size() && header[end] != ',' && header[end] != '}')
        ++end;
    return header.substr(p, end - p);
}

std::vector<std::int64_t> parseShape(const std::string& text, const std::string& where)
{
    std::vector<std::int64_t> dims;
    std::size_t p = 1; // after '('
    while (p < text.size()) {
        while (p < text.size() && (text[p] == ' ' || text[p] == ','))
            ++p;
        if (p >= text.size() || text[p] == ')')
            break;
        std::int64_t v = 0;
        bool digits = false;
        while (p < text.size() && text[p] >= '0' && text[p] <= '9') {
            if (v > std::numeric_limits<std::int64_t>::max() / 10 - 10)
                fail(where, "the .npy shape " + text + " is too large");
            v = v * 10 + (text[p] - '0');
            ++p;
            digits = true;
        }
        if (!digits)
            fail(where, "the .npy shape " + text + " cannot be read");
        dims.push_back(v);
    }
    return dims;
}

// Converts to float and finds the first value that is not finite in the same pass: a block at
// a time, checked while it is still in the cache, so that a large array is walked once.
template <typename T>
void convert(const std::uint8_t* data, std::size_t count, NumpyArray& out)
{
    out.values.resize(count);
    float* values = out.values.data();
    constexpr std::size_t kBlock = 4096;
    for (std::size_t begin = 0; begin < count; begin += kBlock) {
        const std::size_t end = std::min(count, begin + kBlock);
        if constexpr (std::is_same_v<T, float>) {
            std::memcpy(values + begin, data + begin * sizeof(T), (end - begin) * sizeof(T));
        } else {
            for (std::size_t i = begin; i < end; ++i) {
                T v;
                std::memcpy(&v, data + i * sizeof(T), sizeof(T));
                values[i] = static_cast<float>(v);
            }
        }
        if constexpr (!std::is_floating_point_v<T>)
            continue; // integers convert to finite floats
        // An exponent of all ones is NaN or infinity (float64's too, once converted).
        std::uint32_t special = 0;
        for (std::size_t i = begin; i < end; ++i) {
            std::uint32_t bits;
            std::memcpy(&bits, values + i, 4);
            special |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
        }
        if (special && out.firstNonFinite < 0)
            for (std::size_t i = begin; i < end && out.firstNonFinite < 0; ++i)
                if (!std::isfinite(values[i]))
                    out.firstNonFinite = static_cast<std::int64_t>(i);
    }
}

struct ZipCloser {
    void operator()(void* z) const { unzClose(z); }
};
using ZipHandle = std::unique_ptr<void, ZipCloser>;

ZipHandle openZip(const std::string& path)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        fail(path, std::filesystem::exists(path, ec) ? "not a regular file" : "file not found");
    unzFile z = unzOpen64(path.c_str());
    if (!z)
        fail(path, "not a readable .npz (zip) archive");
    return ZipHandle(z);
}

} // namespace

NumpyArray parseNpy(const std::uint8_t* bytes, std::size_t size, const std::string& where)
{
    static const std::uint8_t magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (size < 10 || std::memcmp(bytes, magic, sizeof magic) != 0)
        fail(where, "not a .npy file (it does not start with \\x93NUMPY)");
    const int major = bytes[6];
    if (major < 1 || major > 3)
        fail(where, "unsupported .npy format version " + std::to_string(major));
    const int lengthBytes = major == 1 ? 2 : 4;
    const std::size_t headerStart = 8 + static_cast<std::size_t>(lengthBytes);
    if (size < headerStart)
        fail(where, "truncated inside the .npy header");
    const std::size_t headerLength = littleEndian(bytes + 8, lengthBytes);
    if (size < headerStart + headerLength)
        fail(where, "truncated inside the .npy header");
    const std::string header(reinterpret_cast<const char*>(bytes) + headerStart, headerLength);

    const std::string descr = headerValue(header, "descr", where);
    const std::string fortran = headerValue(header, "fortran_order", where);
    const std::vector<std::int64_t> dims = parseShape(headerValue(header, "shape", where), where);
    if (fortran != "False")
        fail(where, "the array is in Fortran order; save it in C order (numpy.ascontiguousarray) first");

    NumpyArray out;
    out.dims = dims;
    std::size_t elementBytes = 0;
    if (descr == "<f4") {
        out.dtype = "float32", elementBytes = 4;
    } else if (descr == "<f8") {
        out.dtype = "float64", elementBytes = 8;
    } else if (descr == "|u1" || descr == "<u1") {
        out.dtype = "uint8", elementBytes = 1;
    } else if (descr == "<i8") {
        out.dtype = "int64", elementBytes = 8;
    } else {
        fail(where, "unsupported dtype '" + descr +
                        "'; float32, float64, uint8 and int64 (little-endian) are supported: convert with "
                        "numpy's astype");
    }
    std::uint64_t count = 1;
    for (std::int64_t d : dims) {
        if (d != 0 && count > std::numeric_limits<std::uint64_t>::max() / 16 / static_cast<std::uint64_t>(d))
            fail(where, "the .npy shape overflows 64 bits");
        count *= static_cast<std::uint64_t>(d);
    }
    const std::uint64_t need = count * elementBytes;
    const std::size_t dataStart = headerStart + headerLength;
    const std::uint64_t held = size - dataStart;
    if (held < need)
        fail(where, "truncated: the shape " + header.substr(header.find("'shape'")) + " needs " + std::to_string(need) +
                        " bytes of data but the file holds " + std::to_string(held));
    const std::uint8_t* data = bytes + dataStart;
    const auto n = static_cast<std::size_t>(count);
    if (out.dtype == "float32")
        convert<float>(data, n, out);
    else if (out.dtype == "float64")
        convert<double>(data, n, out);
    else if (out.dtype == "uint8")
        convert<std::uint8_t>(data, n, out);
    else
        convert<std::int64_t>(data, n, out);
    return out;
}

NumpyArray readNpyFile(const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fail(path, errno == ENOENT ? "file not found" : std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(path, "not a regular file");
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size == 0) {
        ::close(fd);
        fail(path, "the file is empty");
    }
    // A map rather than a read: the pages are converted straight to float and never copied whole.
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED)
        fail(path, std::string("cannot map the file: ") + std::strerror(errno));
    ::madvise(map, size, MADV_SEQUENTIAL);
    struct Unmap {
        void* p;
        std::size_t n;
        ~Unmap() { ::munmap(p, n); }
    } unmap{map, size};
    return parseNpy(static_cast<const std::uint8_t*>(map), size, path);
}

bool npzHasMember(const std::string& path, const std::string& name)
{
    const ZipHandle zip = openZip(path);
    return unzLocateFile(zip.get(), (name + ".npy").c_str(), 1) == UNZ_OK;
}

NumpyArray readNpzMember(const std::string& path, const std::string& name, bool required)
{
    const ZipHandle zip = openZip(path);
    const std::string member = name + ".npy";
    const std::string where = path + ": " + member;
    if (unzLocateFile(zip.get(), member.c_str(), 1) != UNZ_OK) {
        if (!required)
            return {};
        fail(path, "the archive holds no " + member +
                       " (an .npz for training holds x and y, e.g. numpy.savez(f, "
                       "x=inputs, y=labels))");
    }
    unz_file_info64 info;
    if (unzGetCurrentFileInfo64(zip.get(), &info, nullptr, 0, nullptr, 0, nullptr, 0) != UNZ_OK)
        fail(where, "cannot read the member's header (the archive is corrupt)");
    if (info.compression_method != 0 && info.compression_method != Z_DEFLATED)
        fail(where, "compressed with method " + std::to_string(info.compression_method) +
                        "; only stored and deflated members (what numpy writes) are supported");
    if (unzOpenCurrentFile(zip.get()) != UNZ_OK)
        fail(where, "cannot open the member (the archive is corrupt or encrypted)");
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(info.uncompressed_size));
    std::size_t got = 0;
    while (got < bytes.size()) {
        const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(bytes.size() - got, 1u << 30));
        const int n = unzReadCurrentFile(zip.get(), bytes.data() + got, chunk);
        if (n <= 0)
            break;
        got += static_cast<std::size_t>(n);
    }
    // Closing checks the CRC once the member was read whole.
    const int closed = unzCloseCurrentFile(zip.get());
    if (got != bytes.size())
        fail(where, "the member breaks off after " + std::to_string(got) + " of " + std::to_string(bytes.size()) +
                        " bytes (the archive is corrupt or truncated)");
    if (closed == UNZ_CRCERROR)
        fail(where, "the member's checksum is wrong (the archive is corrupt)");
    return parseNpy(bytes.data(), bytes.size(), where);
}

} // namespace mantissa
