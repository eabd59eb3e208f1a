#pragma once
// A text file read line by line through zlib, so that a gzip-compressed file (digits.csv.gz)
// reads as the text it holds and a plain one as itself. Lines lose their "\r\n" or "\n" and
// the first line a UTF-8 byte-order mark. Throws DataError naming the file when it is not there,
// cannot be read, or its gzip stream is corrupt or breaks off.
#include <cstdint>
#include <memory>
#include <string>

struct gzFile_s;

namespace mantissa {

class TextLines {
public:
    explicit TextLines(const std::string& path);
    ~TextLines();
    TextLines(const TextLines&) = delete;
    TextLines& operator=(const TextLines&) = delete;

    // The next line into `line`; false at the end of the file.
    bool next(std::string& line);
    std::int64_t lineNumber() const { return m_lineNumber; } // of the line `next` gave, from 1

private:
    bool fill(); // more bytes into m_buffer; false at the end

    std::string m_path;
    gzFile_s* m_file = nullptr;
    std::string m_buffer;
    std::size_t m_at = 0; // the first byte of m_buffer not yet given out
    bool m_end = false;
    std::int64_t m_lineNumber = 0;
};

} // namespace mantissa
