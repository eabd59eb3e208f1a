#include "engine/data/image_file.h"

#include "engine/util/check.h"

// jpeglib.h needs FILE and size_t declared before it.
#include <cstdio>
#include <cstring>
// clang-format off
#include <jpeglib.h>
// clang-format on
#include <png.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <csetjmp>
#include <filesystem>
#include <fstream>

namespace mantissa {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& problem) { throw DataError(path + ": " + problem); }

std::string lowerExtension(const std::string& path)
{
    std::string ext = std::filesystem::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    return ext;
}

Image readPng(const std::string& path)
{
    png_image png;
    std::memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&png, path.c_str()))
        fail(path, std::string("corrupt or truncated PNG image: ") + png.message);
    Image image;
    image.width = static_cast<int>(png.width);
    image.height = static_cast<int>(png.height);
    const bool colour = (png.format & PNG_FORMAT_FLAG_COLOR) != 0;
    image.channels = colour ? 3 : 1;
    png.format = colour ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    image.pixels.resize(PNG_IMAGE_SIZE(png));
    // A null background composites any alpha onto black.
    if (!png_image_finish_read(&png, nullptr, image.pixels.data(), 0, nullptr)) {
        const std::string message = png.message;
        png_image_free(&png);
        fail(path, "corrupt or truncated PNG image: " + message);
    }
    return image;
}

// libjpeg reports errors through a callback that must not return: it jumps back to readJpeg.
struct JpegError {
    jpeg_error_mgr manager;
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

void onJpegError(j_common_ptr info)
{
    auto* error = reinterpret_cast<JpegError*>(info->err);
    (*info->err->format_message)(info, error->message);
    std::longjmp(error->jump, 1);
}

void onJpegWarning(j_common_ptr info, int level)
{
    // A corrupt-data warning (level -1) means missing or damaged entropy data: treat as an error.
    if (level < 0)
        onJpegError(info);
}

// The decoding calls, which may jump back to decodeJpeg's setjmp: `image` lives in the
// caller's frame, so its state is in memory when the jump lands, not in stale registers.
void readJpegPixels(jpeg_decompress_struct& info, const std::vector<unsigned char>& bytes, Image& image)
{
    jpeg_mem_src(&info, bytes.data(), static_cast<unsigned long>(bytes.size()));
    jpeg_read_header(&info, TRUE);
    info.out_color_space = info.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&info);
    image.width = static_cast<int>(info.output_width);
    image.height = static_cast<int>(info.output_height);
    image.channels = info.output_components;
    const std::size_t stride = static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.channels);
    image.pixels.resize(stride * static_cast<std::size_t>(image.height));
    while (info.output_scanline < info.output_height) {
        JSAMPROW row = image.pixels.data() + stride * info.output_scanline;
        jpeg_read_scanlines(&info, &row, 1);
    }
    jpeg_finish_decompress(&info);
}

// Whether `bytes` decoded into `image` (else error.message says why). Nothing with a destructor is
// created in this frame, which a longjmp leaves.
bool decodeJpeg(const std::vector<unsigned char>& bytes, Image& image, JpegError& error)
{
    jpeg_decompress_struct info;
    info.err = jpeg_std_error(&error.manager);
    error.manager.error_exit = onJpegError;
    error.manager.emit_message = onJpegWarning;
    error.message[0] = 0;
    if (setjmp(error.jump)) {
        jpeg_destroy_decompress(&info);
        return false;
    }
    jpeg_create_decompress(&info);
    readJpegPixels(info, bytes, image);
    jpeg_destroy_decompress(&info);
    return true;
}

Image readJpeg(const std::string& path, const std::vector<unsigned char>& bytes)
{
    Image image;
    JpegError error;
    if (!decodeJpeg(bytes, image, error))
        fail(path, std::string("corrupt or truncated JPEG image: ") + error.message);
    return image;
}

std::vector<unsigned char> readBytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        fail(path, "cannot be read");
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Bilinear sample of channel c at (y, x) in source pixel coordinates (pixel centres at +0.5).
float sample(const Image& image, float y, float x, int c)
{
    const float fy = std::clamp(y - 0.5f, 0.0f, static_cast<float>(image.height - 1));
    const float fx = std::clamp(x - 0.5f, 0.0f, static_cast<float>(image.width - 1));
    const int y0 = static_cast<int>(fy), x0 = static_cast<int>(fx);
    const int y1 = std::min(y0 + 1, image.height - 1), x1 = std::min(x0 + 1, image.width - 1);
    const float wy = fy - static_cast<float>(y0), wx = fx - static_cast<float>(x0);
    const auto at = [&](int yy, int xx) {
        return static_cast<float>(image.pixels[(static_cast<std::size_t>(yy) * static_cast<std::size_t>(image.width) +
                                                static_cast<std::size_t>(xx)) *
                                                   static_cast<std::size_t>(image.channels) +
                                               static_cast<std::size_t>(c)]);
    };
    const float top = at(y0, x0) * (1 - wx) + at(y0, x1) * wx;
    const float bottom = at(y1, x0) * (1 - wx) + at(y1, x1) * wx;
    return top * (1 - wy) + bottom * wy;
}

} // namespace

std::string imageDecoderVersions()
{
    return "libpng " + std::to_string(png_access_version_number()) + ", libjpeg-turbo " +
           std::to_string(LIBJPEG_TURBO_VERSION_NUMBER);
}

bool isImageFile(const std::string& path)
{
    const std::string ext = lowerExtension(path);
    return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

Image readImageFile(const std::string& path)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        fail(path, std::filesystem::exists(path, ec) ? "not a regular file" : "file not found");
    const std::vector<unsigned char> bytes = readBytes(path);
    if (bytes.size() >= 8 && png_sig_cmp(bytes.data(), 0, 8) == 0)
        return readPng(path);
    if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF)
        return readJpeg(path, bytes);
    fail(path, bytes.empty() ? "the file is empty" : "neither a PNG nor a JPEG image (by its first bytes)");
}

void writePngFile(const std::string& path, const Image& image)
{
    MANTISSA_ASSERT(image.channels == 1 || image.channels == 3);
    png_image png;
    std::memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    png.width = static_cast<png_uint_32>(image.width);
    png.height = static_cast<png_uint_32>(image.height);
    png.format = image.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    if (!png_image_write_to_file(&png, path.c_str(), 0, image.pixels.data(), 0, nullptr))
        fail(path, std::string("cannot write the PNG image: ") + png.message);
}

Image fitImage(const Image& image, int height, int width, ImageFit fit)
{
    if (image.height == height && image.width == width)
        return image;
    // Source pixels per target pixel, and where the target's first pixel starts in the source.
    float scaleY = static_cast<float>(image.height) / static_cast<float>(height);
    float scaleX = static_cast<float>(image.width) / static_cast<float>(width);
    float offsetY = 0, offsetX = 0;
    if (fit == ImageFit::Crop) {
        const float scale = std::min(scaleY, scaleX); // the side that must just cover the target
        offsetY = (static_cast<float>(image.height) - scale * static_cast<float>(height)) / 2;
        offsetX = (static_cast<float>(image.width) - scale * static_cast<float>(width)) / 2;
        scaleY = scaleX = scale;
    }
    Image out;
    out.height = height;
    out.width = width;
    out.channels = image.channels;
    out.pixels.resize(static_cast<std::size_t>(height) * static_cast<std::size_t>(width) *
                      static_cast<std::size_t>(image.channels));
    std::size_t i = 0;
    for (int y = 0; y < height; ++y) {
        const float sy = offsetY + (static_cast<float>(y) + 0.5f) * scaleY;
        for (int x = 0; x < width; ++x) {
            const float sx = offsetX + (static_cast<float>(x) + 0.5f) * scaleX;
            for (int c = 0; c < image.channels; ++c)
                out.pixels[i++] =
                    static_cast<std::uint8_t>(std::lround(std::clamp(sample(image, sy, sx, c), 0.0f, 255.0f)));
        }
    }
    return out;
}

Image toColour(const Image& image)
{
    if (image.channels == 3)
        return image;
    Image out = image;
    out.channels = 3;
    out.pixels.resize(image.pixels.size() * 3);
    for (std::size_t i = 0; i < image.pixels.size(); ++i)
        out.pixels[3 * i] = out.pixels[3 * i + 1] = out.pixels[3 * i + 2] = image.pixels[i];
    return out;
}

} // namespace mantissa
