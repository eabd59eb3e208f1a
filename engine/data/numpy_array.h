#pragma once
// NumPy arrays: .npy files (read through a memory map, so that a large file is not held twice)
// and the .npy members of a .npz archive (a zip file, read with zlib's minizip). The dtypes are the
// ones datasets come in: float32, float64, uint8 and int64, little-endian, C order.
#include <cstdint>
#include <string>
#include <vector>

namespace mantissa {

// An array's values converted to float, with the dtype it was stored in.
struct NumpyArray {
    std::vector<std::int64_t> dims; // outermost first; {} for a scalar
    std::vector<float> values;      // product(dims) values, row-major
    std::string dtype;              // "float32", "float64", "uint8" or "int64"
    // The index of the first value that is NaN or infinite, found while converting; -1: none.
    std::int64_t firstNonFinite = -1;
    std::int64_t count() const { return dims.empty() ? 1 : dims[0]; }
};

// Reads a .npy file. Throws DataError naming the file and the problem: not a .npy file, a
// header that cannot be read, an unsupported dtype (named), Fortran order, or fewer bytes than
// the shape needs.
NumpyArray readNpyFile(const std::string& path);

// The member `name` ("x" for "x.npy") of a .npz archive; `required` false returns an array
// with no dims when the member is missing. Throws DataError naming the archive and the member.
NumpyArray readNpzMember(const std::string& path, const std::string& name, bool required = true);
// Whether the archive holds `name`.npy.
bool npzHasMember(const std::string& path, const std::string& name);

// Parses the bytes of one .npy file; `where` names it in messages ("data.npz: x.npy").
NumpyArray parseNpy(const std::uint8_t* bytes, std::size_t size, const std::string& where);

} // namespace mantissa
