// How fast your files load (docs/data.md, "Speed"): 60,000 small PNGs (28x28 grey, as
// Fashion-MNIST written out as images) read as an image folder, the first epoch's decoding
// rate and the later epochs' batch rate from the decoded tensors; and a large .npy (1 GiB of
// float32 by default) read through its memory map. Prints one line per figure.
//
//   data_loading_bench [DIRECTORY] [NPY_MIB]   (DIRECTORY defaults to a temporary one, kept
//                                               afterwards only when given)
#include "engine/data/batch_loader.h"
#include "engine/data/dataset.h"
#include "engine/data/image_file.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace mantissa;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

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

} // namespace

int main(int argc, char** argv)
{
    const bool keep = argc > 1;
    const fs::path dir =
        keep ? fs::path(argv[1]) : fs::temp_directory_path() / ("mantissa-data-bench-" + std::to_string(::getpid()));
    const std::int64_t npyMiB = argc > 2 ? std::atoll(argv[2]) : 1024;
    fs::create_directories(dir);

    const fs::path images = dir / "images";
    if (!fs::exists(images / "class9")) {
        const auto start = Clock::now();
        writeImages(images);
        std::printf("wrote %d PNGs of %dx%d in %.1f s\n", kImages, kSide, kSide, since(start));
    }
    DataSpec spec;
    spec.dataset = DatasetKind::Files;
    spec.path = images.string();
    auto start = Clock::now();
    const DatasetSplits splits = loadDatasets(spec, 1);
    const double load = since(start);
    std::printf("image folder: %lld images decoded and prepared in %.2f s: %.0f images/s (first epoch)\n",
                static_cast<long long>(splits.train.size() + splits.test.size()), load,
                static_cast<double>(splits.train.size() + splits.test.size()) / load);
    for (int epoch = 1; epoch <= 3; ++epoch) {
        const double seconds = epochSeconds(splits.train, 1, epoch);
        std::printf("image folder: epoch %d's batches from the decoded tensors: %.3f s, %.0f samples/s\n", epoch,
                    seconds, static_cast<double>(splits.train.size()) / seconds);
    }

    const std::int64_t rows = npyMiB * (1 << 20) / (256 * 4);
    const fs::path arrays = dir / "arrays";
    fs::create_directories(arrays);
    start = Clock::now();
    writeNpy(arrays, rows);
    std::printf("wrote x.npy of %lld x 256 float32 (%lld MiB) in %.1f s\n", static_cast<long long>(rows),
                static_cast<long long>(npyMiB), since(start));
    spec.path = (arrays / "x.npy").string();
    start = Clock::now();
    const DatasetSplits big = loadDatasets(spec, 1);
    const double npy = since(start);
    std::printf(".npy: %lld MiB read and prepared in %.2f s: %.0f MiB/s\n", static_cast<long long>(npyMiB), npy,
                static_cast<double>(npyMiB) / npy);
    const double seconds = epochSeconds(big.train, 1, 1);
    std::printf(".npy: an epoch's batches from the tensors: %.2f s, %.0f samples/s\n", seconds,
                static_cast<double>(big.train.size()) / seconds);
    if (!keep)
        fs::remove_all(dir);
    return 0;
}
