// How fast your files load (docs/data.md, "Speed"): 60,000 small PNGs (28x28 grey, as
// Fashion-MNIST written out as images) read as an image folder, and a large .npy (1 GiB of
// float32 by default). For each: a load with the decoded-data cache off (decoding, as every load
// did before the cache), the first load with it on (decoding and writing the copy), a load from
// the copy, and the later epochs' batch rate from the tensors. Each round starts from an empty
// cache; the figures are the rounds' medians with their range, in wall-clock seconds and in the
// process's CPU seconds (user and system: on a machine shared with other work, the steadier).
//
//   data_loading_bench [DIRECTORY] [NPY_MIB] [ROUNDS]   (DIRECTORY defaults to a temporary one,
//                                                       kept afterwards only when given)
#include "engine/data/batch_loader.h"
#include "engine/data/dataset.h"
#include "engine/data/image_file.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

using namespace mantissa;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double cpuSeconds()
{
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * t.tv_usec; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Wall-clock and CPU seconds of one load.
struct Timed {
    std::vector<double> wall, cpu;
};

DatasetSplits timedLoad(const DataSpec& spec, Timed& timed)
{
    const auto start = Clock::now();
    const double cpu = cpuSeconds();
    DatasetSplits splits = loadDatasets(spec, 1);
    timed.cpu.push_back(cpuSeconds() - cpu);
    timed.wall.push_back(since(start));
    return splits;
}

constexpr int kImages = 60000, kClasses = 10, kSide = 28;

void writeImages(const fs::path& root)
{
    for (int c = 0; c < kClasses; ++c)
        fs::create_directories(root / ("class" + std::to_string(c)));
    Image image{kSide, kSide, 1, std::vector<std::uint8_t>(kSide * kSide)};
    for (int i = 0; i < kImages; ++i) {
        for (int p = 0; p < kSide * kSide; ++p) // a blob whose place depends on the class, plus noise
            image.pixels[static_cast<std::size_t>(p)] =
                static_cast<std::uint8_t>((p * 7 + i * 13 + (p / kSide == i % kClasses + 9 ? 180 : 0)) % 256);
        writePngFile((root / ("class" + std::to_string(i % kClasses)) / (std::to_string(i) + ".png")).string(), image);
    }
}

// A .npy of `rows` x 256 float32 and its int64 labels.
void writeNpy(const fs::path& dir, std::int64_t rows)
{
    const auto header = [](const std::string& descr, const std::string& shape) {
        std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
        while ((10 + h.size() + 1) % 64 != 0)
            h += ' ';
        h += '\n';
        std::string out = "\x93NUMPY";
        out += '\x01';
        out += '\x00';
        out += static_cast<char>(h.size() & 0xff);
        out += static_cast<char>(h.size() >> 8);
        return out + h;
    };
    std::ofstream x(dir / "x.npy", std::ios::binary);
    x << header("<f4", "(" + std::to_string(rows) + ", 256)");
    std::vector<float> row(256);
    for (std::int64_t r = 0; r < rows; ++r) {
        for (int k = 0; k < 256; ++k)
            row[static_cast<std::size_t>(k)] = static_cast<float>((r * 31 + k * 17) % 1000) / 1000.0f;
        x.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(row.size() * sizeof(float)));
    }
    std::ofstream y(dir / "y.npy", std::ios::binary);
    y << header("<i8", "(" + std::to_string(rows) + ",)");
    for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t label = r % 10;
        y.write(reinterpret_cast<const char*>(&label), sizeof label);
    }
}

double epochSeconds(const Dataset& data, std::uint64_t seed, int epoch)
{
    BatchLoader loader(data, BatchLoaderOptions::training(128, seed));
    loader.startEpoch(epoch);
    HostBatch batch;
    const auto start = Clock::now();
    while (loader.next(batch)) {}
    return since(start);
}

struct Figures {
    Timed off, first, cached;
    std::vector<double> epoch;
    std::int64_t samples = 0, trainSamples = 0;
};

std::string median(std::vector<double> v, const char* format)
{
    std::sort(v.begin(), v.end());
    char text[96];
    const std::string f = std::string(format) + " [" + format + " to " + format + "]";
    std::snprintf(text, sizeof text, f.c_str(), v[v.size() / 2], v.front(), v.back());
    return text;
}

// One round: the cache emptied, then a load with it off, the first load with it on and a load
// from the copy; the copy's tensors must be the decoding's.
void round(DataSpec spec, const fs::path& cache, Figures& figures)
{
    fs::remove_all(cache);
    spec.cache = false;
    DatasetSplits decoded = timedLoad(spec, figures.off);
    figures.samples = decoded.train.size() + decoded.test.size();
    figures.trainSamples = decoded.train.size();
    const std::string fingerprint = decoded.fingerprint;
    decoded = {};

    spec.cache = true;
    DatasetSplits first = timedLoad(spec, figures.first);
    if (first.fromCache || first.fingerprint != fingerprint)
        std::printf("  the first load with the cache on was not a decoding of the same data: %s\n",
                    first.notes.back().c_str());
    first = {};

    const DatasetSplits cached = timedLoad(spec, figures.cached);
    if (!cached.fromCache || cached.fingerprint != fingerprint)
        std::printf("  the second load did not come from the cache with the same fingerprint: %s\n",
                    cached.notes.back().c_str());
    for (int epoch = 1; epoch <= 3; ++epoch)
        figures.epoch.push_back(epochSeconds(cached.train, 1, epoch));
}

void report(const char* what, const Figures& f, double mib)
{
    const auto rate = [&](std::vector<double> seconds, double amount) {
        for (double& s : seconds)
            s = amount / s;
        return seconds;
    };
    const double amount = mib > 0 ? mib : static_cast<double>(f.samples);
    const char* unit = mib > 0 ? "MiB/s" : "samples/s";
    const auto line = [&](const char* load, const Timed& t) {
        std::printf("%s, %s %s s (CPU %s s), %s %s\n", what, load, median(t.wall, "%.2f").c_str(),
                    median(t.cpu, "%.2f").c_str(), median(rate(t.wall, amount), "%.0f").c_str(), unit);
    };
    line("cache off (decoding):      ", f.off);
    line("first load (decode, write):", f.first);
    line("load from the cache:       ", f.cached);
    std::printf("%s, later epochs' batches:      %s s, %s samples/s\n", what, median(f.epoch, "%.3f").c_str(),
                median(rate(f.epoch, static_cast<double>(f.trainSamples)), "%.0f").c_str());
}

} // namespace

int main(int argc, char** argv)
{
    const bool keep = argc > 1;
    const fs::path dir =
        keep ? fs::path(argv[1]) : fs::temp_directory_path() / ("mantissa-data-bench-" + std::to_string(::getpid()));
    const std::int64_t npyMiB = argc > 2 ? std::atoll(argv[2]) : 1024;
    const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 3;
    fs::create_directories(dir);
    // A cache of its own, emptied every round, so that the user's is neither used nor filled.
    const fs::path cache = dir / "cache";
    ::setenv("XDG_CACHE_HOME", cache.c_str(), 1);

    const fs::path images = dir / "images";
    if (!fs::exists(images / "class9")) {
        const auto start = Clock::now();
        writeImages(images);
        std::printf("wrote %d PNGs of %dx%d in %.1f s\n", kImages, kSide, kSide, since(start));
    }
    const std::int64_t rows = npyMiB * (1 << 20) / (256 * 4);
    const fs::path arrays = dir / "arrays";
    if (!fs::exists(arrays / "y.npy") || fs::file_size(arrays / "x.npy") < static_cast<std::uintmax_t>(npyMiB << 20)) {
        fs::create_directories(arrays);
        const auto start = Clock::now();
        writeNpy(arrays, rows);
        std::printf("wrote x.npy of %lld x 256 float32 (%lld MiB) in %.1f s\n", static_cast<long long>(rows),
                    static_cast<long long>(npyMiB), since(start));
    }

    DataSpec spec;
    spec.dataset = DatasetKind::Files;
    spec.path = images.string();
    DataSpec npy = spec;
    npy.path = (arrays / "x.npy").string();
    Figures imageFigures, npyFigures;
    for (int r = 0; r < rounds; ++r) { // the two sources alternate, so that a busy moment hits both
        round(spec, cache, imageFigures);
        round(npy, cache, npyFigures);
    }
    std::printf("medians of %d rounds [range]:\n", rounds);
    report("60,000 PNGs", imageFigures, 0);
    report(".npy", npyFigures, static_cast<double>(npyMiB));
    fs::remove_all(cache);
    if (!keep)
        fs::remove_all(dir);
    return 0;
}
