#pragma once
// PNG and JPEG images read and written with Debian's libpng and libjpeg-turbo, and the two ways
// an image is brought to a dataset's size (ImageFit).
#include "engine/config/config_enums.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mantissa {

// 8-bit pixels, row-major, channels interleaved (HWC): 1 channel for grey, 3 for colour.
struct Image {
    int width = 0, height = 0, channels = 0;
    std::vector<std::uint8_t> pixels;
};

// Whether `path`'s extension is one readImageFile reads (.png, .jpg, .jpeg, any case).
bool isImageFile(const std::string& path);

// Decodes a PNG or JPEG file (chosen by its first bytes) into grey (1 channel) or colour (3
// channels); an alpha channel is composited onto black and dropped. Throws DataError naming
// the file and the decoder's complaint for a corrupt, truncated or unsupported image.
Image readImageFile(const std::string& path);

// The decoders' versions ("libpng 10639, libjpeg-turbo 2001005"): another version may decode a
// JPEG to other pixels, so the decoded-data cache keys its images by them.
std::string imageDecoderVersions();

// Writes `image` (1 or 3 channels) as an 8-bit PNG. Throws DataError naming the file.
void writePngFile(const std::string& path, const Image& image);

// `image` brought to height x width: stretched (Resize) or scaled to cover the size keeping
// its aspect ratio and centre-cropped (Crop), both with bilinear interpolation at pixel
// centres. An image already of that size comes back unchanged.
Image fitImage(const Image& image, int height, int width, ImageFit fit);

// A grey image as 3 channels (the grey value in each), so that grey and colour images can share
// a dataset; a colour image comes back unchanged.
Image toColour(const Image& image);

} // namespace mantissa
