#include "engine/data/data_cache.h"

#include "engine/data/image_file.h"
#include "engine/util/check.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mantissa {

namespace {

namespace fs = std::filesystem;

// Raised whenever the layout below or what a PreparedSource holds changes, and whenever the
// decoding of a format changes its tensors (a scale, a resampling rule): copies of another
// version are then misses rather than stale data.
constexpr std::uint32_t kLayoutVersion = 1;
constexpr char kMagic[8] = {'M', 'N', 'T', 'S', 'D', 'A', 'T', 'A'};
constexpr const char* kExtension = ".mantissa-data";
constexpr std::size_t kHeaderBytes = 64;
constexpr std::size_t kChunkBytes = std::size_t{4} << 20; // read and checksummed a piece at a time
// A timestamp this close to when it was read may not show a later change made within the
// filesystem's timestamp granularity (git's "racily clean" entries): such inputs are also
// compared by content.
constexpr std::int64_t kRacyNs = 3'000'000'000;
// Temporary files older than this are what a crashed writer left behind.
constexpr auto kStaleTemporary = std::chrono::hours(1);

// ---- A fast checksum (xxHash64's rounds over four lanes); it finds damage, it does not
// defend against forgery. Fed in pieces, it gives what one call over the whole would. ----

constexpr std::uint64_t kP1 = 0x9e3779b185ebca87ull, kP2 = 0xc2b2ae3d27d4eb4full, kP3 = 0x165667b19e3779f9ull;

std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

class Checksum {
public:
    void add(const void* data, std::size_t size)
    {
        const auto* p = static_cast<const unsigned char*>(data);
        m_total += size;
        if (m_buffered > 0) {
            const std::size_t take = std::min(size, sizeof m_buffer - m_buffered);
            std::memcpy(m_buffer + m_buffered, p, take);
            m_buffered += take, p += take, size -= take;
            if (m_buffered < sizeof m_buffer)
                return;
            stripe(m_buffer);
            m_buffered = 0;
        }
        for (; size >= 32; p += 32, size -= 32)
            stripe(p);
        std::memcpy(m_buffer, p, size);
        m_buffered = size;
    }
    std::uint64_t value() const
    {
        std::uint64_t h = rotl(m_lane[0], 1) + rotl(m_lane[1], 7) + rotl(m_lane[2], 12) + rotl(m_lane[3], 18);
        h ^= m_total * kP1;
        for (std::size_t i = 0; i < m_buffered; ++i)
            h = rotl(h ^ (m_buffer[i] * kP3), 11) * kP1;
        h ^= h >> 33, h *= kP2, h ^= h >> 29, h *= kP3, h ^= h >> 32;
        return h;
    }

private:
    void stripe(const unsigned char* p)
    {
        for (int lane = 0; lane < 4; ++lane) {
            std::uint64_t word;
            std::memcpy(&word, p + 8 * lane, 8);
            m_lane[lane] = rotl(m_lane[lane] + word * kP2, 31) * kP1;
        }
    }
    std::uint64_t m_lane[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
    unsigned char m_buffer[32] = {};
    std::size_t m_buffered = 0;
    std::uint64_t m_total = 0;
};

// ---- The metadata, as bytes ----

struct Damaged : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class Writer {
public:
    void u64(std::uint64_t v) { bytes.append(reinterpret_cast<const char*>(&v), 8); }
    void text(const std::string& s)
    {
        u64(s.size());
        bytes += s;
    }
    void texts(const std::vector<std::string>& list)
    {
        u64(list.size());
        for (const std::string& s : list)
            text(s);
    }
    void dims(const Shape& shape)
    {
        u64(shape.dims().size());
        for (std::int64_t d : shape.dims())
            u64(static_cast<std::uint64_t>(d));
    }
    std::string bytes;
};

class Reader {
public:
    explicit Reader(const std::string& bytes) : m_bytes(bytes) {}
    std::uint64_t u64()
    {
        need(8);
        std::uint64_t v;
        std::memcpy(&v, m_bytes.data() + m_at, 8);
        m_at += 8;
        return v;
    }
    std::string text()
    {
        const std::uint64_t n = u64();
        need(n);
        std::string s = m_bytes.substr(m_at, n);
        m_at += n;
        return s;
    }
    std::vector<std::string> texts()
    {
        const std::uint64_t n = u64();
        need(n * 8);
        std::vector<std::string> list;
        for (std::uint64_t i = 0; i < n; ++i)
            list.push_back(text());
        return list;
    }
    Shape dims()
    {
        const std::uint64_t n = u64();
        if (n > 16)
            throw Damaged("a shape of rank " + std::to_string(n));
        std::vector<std::int64_t> d;
        for (std::uint64_t i = 0; i < n; ++i)
            d.push_back(static_cast<std::int64_t>(u64()));
        return Shape(d);
    }
    bool done() const { return m_at == m_bytes.size(); }

private:
    void need(std::uint64_t n) const
    {
        if (n > m_bytes.size() - m_at)
            throw Damaged("the metadata breaks off");
    }
    const std::string& m_bytes;
    std::size_t m_at = 0;
};

// ---- The inputs' stamps: what tells that a file or folder changed ----

struct Stamp {
    std::string path;
    std::uint64_t size = 0, mtime = 0, ctime = 0, inode = 0, device = 0, isDirectory = 0;
    std::uint64_t racy = 0, content = 0; // content: compared only for racy stamps
};

std::uint64_t nanoseconds(const timespec& t)
{
    return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(t.tv_nsec);
}

// A file's bytes or a folder's sorted entry names; nothing when they cannot be read.
std::optional<std::uint64_t> contentChecksum(const std::string& path, bool directory)
{
    Checksum sum;
    if (directory) {
        std::vector<std::string> names;
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(path, ec))
            names.push_back(entry.path().filename().string());
        if (ec)
            return std::nullopt;
        std::sort(names.begin(), names.end());
        for (const std::string& name : names)
            sum.add(name.c_str(), name.size() + 1);
        return sum.value();
    }
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return std::nullopt;
    std::vector<char> buffer(1 << 16);
    ssize_t n;
    while ((n = ::read(fd, buffer.data(), buffer.size())) > 0)
        sum.add(buffer.data(), static_cast<std::size_t>(n));
    ::close(fd);
    if (n < 0)
        return std::nullopt;
    return sum.value();
}

std::optional<Stamp> stampOf(const std::string& path)
{
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return std::nullopt;
    Stamp s;
    s.path = path;
    s.size = S_ISDIR(st.st_mode) ? 0 : static_cast<std::uint64_t>(st.st_size);
    s.mtime = nanoseconds(st.st_mtim);
    s.ctime = nanoseconds(st.st_ctim);
    s.inode = st.st_ino;
    s.device = st.st_dev;
    s.isDirectory = S_ISDIR(st.st_mode) ? 1 : 0;
    return s;
}

std::uint64_t nowNs()
{
    timespec t{};
    ::clock_gettime(CLOCK_REALTIME, &t);
    return nanoseconds(t);
}

// Stamps for `paths`, taken after they were read: one that cannot be taken makes the source
// uncacheable (nothing).
std::optional<std::vector<Stamp>> stampsOf(const std::vector<std::string>& paths)
{
    const std::uint64_t now = nowNs();
    std::vector<Stamp> stamps;
    stamps.reserve(paths.size());
    for (const std::string& path : paths) {
        std::optional<Stamp> s = stampOf(path);
        if (!s)
            return std::nullopt;
        if (std::max(s->mtime, s->ctime) + kRacyNs >= now) {
            const std::optional<std::uint64_t> content = contentChecksum(path, s->isDirectory != 0);
            if (!content)
                return std::nullopt;
            s->racy = 1, s->content = *content;
        }
        stamps.push_back(std::move(*s));
    }
    return stamps;
}

bool unchanged(const Stamp& recorded)
{
    const std::optional<Stamp> now = stampOf(recorded.path);
    if (!now || now->size != recorded.size || now->mtime != recorded.mtime || now->ctime != recorded.ctime ||
        now->inode != recorded.inode || now->device != recorded.device || now->isDirectory != recorded.isDirectory)
        return false;
    return !recorded.racy || contentChecksum(recorded.path, recorded.isDirectory != 0) == recorded.content;
}

// ---- The file ----

void putDataset(Writer& w, const Dataset& d)
{
    w.text(d.name);
    w.dims(d.sampleShape);
    w.dims(d.labelShape);
    w.u64(static_cast<std::uint64_t>(d.classes));
    w.u64(d.inputs.size());
    w.u64(d.labels.size());
}

// The dataset's description; its values are sized, to be filled from the payload.
Dataset takeDataset(Reader& r, std::uint64_t& floats, std::uint64_t payloadFloats)
{
    Dataset d;
    d.name = r.text();
    d.sampleShape = r.dims();
    d.labelShape = r.dims();
    d.classes = static_cast<std::int64_t>(r.u64());
    const std::uint64_t inputs = r.u64(), labels = r.u64();
    // Checked against the payload's size before anything is allocated.
    if (inputs > payloadFloats - std::min(floats, payloadFloats) ||
        labels > payloadFloats - std::min(floats + inputs, payloadFloats))
        throw Damaged("the tensors' sizes do not add up to the payload's");
    floats += inputs + labels;
    d.inputs.resize(inputs);
    d.labels.resize(labels);
    return d;
}

std::string metadataOf(const std::string& key, const PreparedSource& source, const std::vector<Stamp>& stamps)
{
    Writer w;
    w.text(key);
    w.u64(stamps.size());
    for (const Stamp& s : stamps) {
        w.text(s.path);
        for (std::uint64_t v : {s.size, s.mtime, s.ctime, s.inode, s.device, s.isDirectory, s.racy, s.content})
            w.u64(v);
    }
    w.u64(static_cast<std::uint64_t>(source.task));
    w.texts(source.classNames);
    w.texts(source.notes);
    const DataFingerprint::State hash = source.contentHash.state();
    w.u64(hash.state);
    w.u64(hash.length);
    putDataset(w, source.train);
    putDataset(w, source.test);
    return w.bytes;
}

struct Header {
    char magic[8];
    std::uint32_t version, reserved;
    std::uint64_t metadataBytes, payloadBytes, metadataChecksum, payloadChecksum;
    char padding[kHeaderBytes - 48];
};
static_assert(sizeof(Header) == kHeaderBytes);

class File {
public:
    explicit File(int fd) : m_fd(fd) {}
    ~File()
    {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    File(const File&) = delete;
    File& operator=(const File&) = delete;
    int fd() const { return m_fd; }

private:
    int m_fd;
};

bool readAll(int fd, void* data, std::size_t size)
{
    auto* p = static_cast<char*>(data);
    while (size > 0) {
        const ssize_t n = ::read(fd, p, std::min(size, kChunkBytes));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n, size -= static_cast<std::size_t>(n);
    }
    return true;
}

void writeAll(int fd, const void* data, std::size_t size, const std::string& where)
{
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = ::write(fd, p, std::min(size, kChunkBytes));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            throw DataError(where + ": cannot write the decoded-data cache: " +
                            std::string(n < 0 ? std::strerror(errno) : "nothing written"));
        p += n, size -= static_cast<std::size_t>(n);
    }
}

// Reads `values` from the payload a piece at a time, each piece checksummed while it is hot.
bool readValues(int fd, std::vector<float>& values, Checksum& sum)
{
    auto* p = reinterpret_cast<char*>(values.data());
    std::size_t left = values.size() * sizeof(float);
    while (left > 0) {
        const std::size_t piece = std::min(left, kChunkBytes);
        if (!readAll(fd, p, piece))
            return false;
        sum.add(p, piece);
        p += piece, left -= piece;
    }
    return true;
}

std::string mib(std::uint64_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
    return text;
}

// Removes the least recently used copies (by modification time, which a hit renews) until
// the copies take at most `limit` bytes, never `keep`; and temporary files a crashed writer
// left, and old lock files without a copy. Removing a lock file another process holds costs at
// most a second decoding of its source: the copies are renamed into place whole either way.
void evict(const std::string& directory, std::uint64_t limit, const std::string& keep)
{
    struct Entry {
        fs::path path;
        fs::file_time_type time;
        std::uint64_t size;
    };
    std::vector<Entry> entries;
    std::uint64_t total = 0;
    std::error_code ec;
    const auto now = fs::file_time_type::clock::now();
    for (const auto& entry : fs::directory_iterator(directory, ec)) {
        const std::string name = entry.path().filename().string();
        std::error_code e;
        const auto time = entry.last_write_time(e);
        if (e)
            continue;
        const bool temporary = name.find(std::string(kExtension) + ".tmp-") != std::string::npos;
        const bool orphanLock =
            name.ends_with(".lock") && !fs::exists(entry.path().parent_path() / entry.path().stem(), e);
        if ((temporary || orphanLock) && now - time > kStaleTemporary) {
            fs::remove(entry.path(), e);
            continue;
        }
        if (!name.ends_with(kExtension))
            continue;
        const std::uint64_t size = entry.file_size(e);
        if (e)
            continue;
        total += size;
        if (entry.path().string() != keep)
            entries.push_back({entry.path(), time, size});
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.time < b.time; });
    for (const Entry& entry : entries) {
        if (total <= limit)
            break;
        std::error_code e;
        if (fs::remove(entry.path, e)) { // another process may have removed it first
            total -= entry.size;
            fs::remove(entry.path.string() + ".lock", e);
        }
    }
}

// Held while one process decodes and writes a source; another wanting the same source waits,
// then finds the copy. An flock goes with its holder, so a crashed process leaves no lock.
class KeyLock {
public:
    explicit KeyLock(const std::string& path) : m_fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644))
    {
        if (m_fd >= 0)
            while (::flock(m_fd, LOCK_EX) != 0 && errno == EINTR) {}
    }
    ~KeyLock()
    {
        if (m_fd >= 0)
            ::close(m_fd); // releases the lock
    }
    KeyLock(const KeyLock&) = delete;
    KeyLock& operator=(const KeyLock&) = delete;

private:
    int m_fd;
};

std::string number(double v)
{
    char text[40];
    std::snprintf(text, sizeof text, "%.9g", v);
    return text;
}

std::string list(const std::vector<std::int64_t>& values)
{
    std::string out;
    for (std::int64_t v : values)
        out += std::to_string(v) + ",";
    return out;
}

} // namespace

std::string dataCacheDirectory()
{
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
        return (fs::path(xdg) / "mantissa" / "data").string();
    if (const char* home = std::getenv("HOME"); home && *home)
        return (fs::path(home) / ".cache" / "mantissa" / "data").string();
    return {};
}

std::string dataCacheKey(const DataSpec& spec)
{
    std::error_code ec;
    const fs::path absolute = fs::absolute(spec.path, ec);
    return "layout " + std::to_string(kLayoutVersion) + "; " + imageDecoderVersions() +
           "; path=" + (ec ? spec.path : absolute.lexically_normal().string()) +
           "; format=" + std::string(enumKey(spec.format)) + "; test_split=" + number(spec.testSplit) +
           "; image_size=" + list(spec.imageSize) + "; image_fit=" + std::string(enumKey(spec.imageFit)) +
           "; skip_bad_images=" + std::to_string(spec.skipBadImages) + "; header=" + std::string(enumKey(spec.header)) +
           "; label_column=" + std::to_string(spec.labelColumn) + "; task=" + std::string(enumKey(spec.task)) +
           "; targets=" + std::to_string(spec.targets) + "; limit_train=" + std::to_string(spec.limitTrain) +
           "; limit_test=" + std::to_string(spec.limitTest);
}

std::string dataCacheFile(const std::string& directory, const std::string& key)
{
    DataFingerprint hash;
    hash.addText(key);
    return (fs::path(directory) / (hash.hex() + kExtension)).string();
}

std::optional<PreparedSource> readDataCacheFile(const std::string& file, const std::string& key, std::string& problem)
{
    File in(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    if (in.fd() < 0)
        return std::nullopt;
    try {
        struct stat st {};
        if (::fstat(in.fd(), &st) != 0)
            throw Damaged("cannot be examined");
        const auto size = static_cast<std::uint64_t>(st.st_size);
        Header header{};
        if (size < kHeaderBytes || !readAll(in.fd(), &header, kHeaderBytes))
            throw Damaged("is truncated inside its header");
        if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0)
            throw Damaged("is not a decoded-data cache file");
        if (header.version != kLayoutVersion)
            return std::nullopt; // another version's copy: rewritten in this one's layout
        if (header.metadataBytes > size || header.payloadBytes > size ||
            kHeaderBytes + header.metadataBytes + header.payloadBytes != size)
            throw Damaged("holds " + std::to_string(size) + " bytes where its header announces " +
                          std::to_string(kHeaderBytes + header.metadataBytes + header.payloadBytes) +
                          " (truncated or damaged)");
        std::string metadata(header.metadataBytes, '\0');
        if (!readAll(in.fd(), metadata.data(), metadata.size()))
            throw Damaged("is truncated inside its metadata");
        Checksum metaSum;
        metaSum.add(metadata.data(), metadata.size());
        if (metaSum.value() != header.metadataChecksum)
            throw Damaged("has a damaged metadata section (checksum)");

        Reader r(metadata);
        if (r.text() != key)
            return std::nullopt; // another source's copy under the same name: replaced
        const std::uint64_t stampCount = r.u64();
        if (stampCount > metadata.size() / 8)
            throw Damaged("lists more inputs than it holds");
        PreparedSource out;
        bool fresh = true;
        for (std::uint64_t i = 0; i < stampCount; ++i) {
            Stamp s;
            s.path = r.text();
            for (std::uint64_t* v :
                 {&s.size, &s.mtime, &s.ctime, &s.inode, &s.device, &s.isDirectory, &s.racy, &s.content})
                *v = r.u64();
            fresh = fresh && unchanged(s);
            out.inputs.push_back(s.path);
        }
        if (!fresh)
            return std::nullopt; // the files changed: decoded again
        const std::uint64_t task = r.u64();
        if (task > static_cast<std::uint64_t>(DataTask::Regression))
            throw Damaged("names no task");
        out.task = static_cast<DataTask>(task);
        out.classNames = r.texts();
        out.notes = r.texts();
        DataFingerprint::State hash;
        hash.state = r.u64();
        hash.length = r.u64();
        out.contentHash = DataFingerprint::resumed(hash);
        if (header.payloadBytes % sizeof(float) != 0)
            throw Damaged("has a payload of a size no float tensors have");
        const std::uint64_t payloadFloats = header.payloadBytes / sizeof(float);
        std::uint64_t floats = 0;
        out.train = takeDataset(r, floats, payloadFloats);
        out.test = takeDataset(r, floats, payloadFloats);
        if (!r.done() || floats != payloadFloats)
            throw Damaged("has metadata that does not describe its payload");

        Checksum payloadSum;
        for (std::vector<float>* values : {&out.train.inputs, &out.train.labels, &out.test.inputs, &out.test.labels})
            if (!readValues(in.fd(), *values, payloadSum))
                throw Damaged("is truncated inside its tensors");
        if (payloadSum.value() != header.payloadChecksum)
            throw Damaged("has damaged tensors (checksum)");
        ::futimens(in.fd(), nullptr); // recently used: the last to be evicted
        return out;
    } catch (const Damaged& e) {
        problem = file + " " + e.what();
        return std::nullopt;
    } catch (const std::bad_alloc&) {
        problem = file + " announces tensors larger than this machine's memory";
        return std::nullopt;
    }
}

void writeDataCacheFile(const std::string& file, const std::string& key, const PreparedSource& source)
{
    const std::optional<std::vector<Stamp>> stamps = stampsOf(source.inputs);
    if (!stamps)
        throw DataError(file + ": an input of the source cannot be examined, so a copy could not be checked later");
    const std::string metadata = metadataOf(key, source, *stamps);

    static std::atomic<unsigned> counter{0};
    const std::string temporary =
        file + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
    File out(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (out.fd() < 0)
        throw DataError(temporary + ": cannot create a decoded-data cache file: " + std::strerror(errno));
    try {
        Header header{};
        std::memcpy(header.magic, kMagic, sizeof kMagic);
        header.version = kLayoutVersion;
        header.metadataBytes = metadata.size();
        Checksum metaSum;
        metaSum.add(metadata.data(), metadata.size());
        header.metadataChecksum = metaSum.value();
        writeAll(out.fd(), &header, kHeaderBytes, temporary); // its checksums once the payload is written
        writeAll(out.fd(), metadata.data(), metadata.size(), temporary);
        Checksum payloadSum;
        for (const std::vector<float>* values :
             {&source.train.inputs, &source.train.labels, &source.test.inputs, &source.test.labels}) {
            const auto* p = reinterpret_cast<const char*>(values->data());
            const std::size_t bytes = values->size() * sizeof(float);
            for (std::size_t at = 0; at < bytes; at += kChunkBytes) {
                const std::size_t piece = std::min(kChunkBytes, bytes - at);
                payloadSum.add(p + at, piece);
                writeAll(out.fd(), p + at, piece, temporary);
            }
            header.payloadBytes += bytes;
        }
        header.payloadChecksum = payloadSum.value();
        if (::pwrite(out.fd(), &header, kHeaderBytes, 0) != static_cast<ssize_t>(kHeaderBytes))
            throw DataError(temporary + ": cannot write the decoded-data cache's header: " + std::strerror(errno));
        // The rename replaces a copy whole: a reader sees the old file or the new one, never a mix.
        if (::rename(temporary.c_str(), file.c_str()) != 0)
            throw DataError(file + ": cannot put the decoded-data cache file in place: " + std::strerror(errno));
    } catch (...) {
        ::unlink(temporary.c_str());
        throw;
    }
}

PreparedSource loadThroughDataCache(const DataSpec& spec, const std::function<PreparedSource()>& decode,
                                    DataCacheOutcome& outcome)
{
    outcome = {};
    const std::string directory = dataCacheDirectory();
    if (!spec.cache || directory.empty())
        return decode();
    const std::string key = dataCacheKey(spec);
    outcome.file = dataCacheFile(directory, key);
    const auto hit = [&](PreparedSource&& source) {
        outcome.hit = true;
        outcome.message = "read from the decoded-data cache (" + outcome.file + ")";
        return std::move(source);
    };
    std::string problem;
    if (std::optional<PreparedSource> copy = readDataCacheFile(outcome.file, key, problem))
        return hit(std::move(*copy));
    std::error_code ec;
    fs::create_directories(directory, ec);
    // Another process may be decoding this source: wait for it, then look again.
    const KeyLock lock(outcome.file + ".lock");
    problem.clear();
    if (std::optional<PreparedSource> copy = readDataCacheFile(outcome.file, key, problem))
        return hit(std::move(*copy));
    if (!problem.empty()) { // never trusted: said once here, and in the data's notes
        problem += "; it was ignored and rebuilt";
        std::fprintf(stderr, "mantissa: %s\n", problem.c_str());
        problem += "; ";
    }

    PreparedSource source = decode();
    const std::uint64_t limit = static_cast<std::uint64_t>(spec.cacheLimit) << 20;
    std::uint64_t bytes = 0;
    for (const Dataset* d : {&source.train, &source.test})
        bytes += (d->inputs.size() + d->labels.size()) * sizeof(float);
    if (bytes > limit) {
        outcome.message = problem + "not cached: its " + mib(bytes) + " are more than data.cache_limit (" +
                          std::to_string(spec.cacheLimit) + " MiB)";
        return source;
    }
    try {
        writeDataCacheFile(outcome.file, key, source);
        evict(directory, limit, outcome.file);
        outcome.message = problem + "decoded and kept in the decoded-data cache (" + outcome.file + ")";
    } catch (const DataError& e) {
        outcome.message = problem + "not cached: " + e.what();
    }
    return source;
}

} // namespace mantissa
