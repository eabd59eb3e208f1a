#include "engine/data/text_lines.h"

#include "engine/util/check.h"

#include <zlib.h>

#include <filesystem>

namespace mantissa {

namespace {

constexpr unsigned kChunk = 1 << 18;

} // namespace

TextLines::TextLines(const std::string& path) : m_path(path)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw DataError(path + ": " + (std::filesystem::exists(path, ec) ? "not a regular file" : "file not found"));
    m_file = gzopen(path.c_str(), "rb");
    if (!m_file)
        throw DataError(path + ": cannot be read");
    gzbuffer(m_file, kChunk);
}

TextLines::~TextLines()
{
    if (m_file)
        gzclose(m_file);
}

bool TextLines::fill()
{
    if (m_end)
        return false;
    m_buffer.erase(0, m_at);
    m_at = 0;
    const std::size_t used = m_buffer.size();
    m_buffer.resize(used + kChunk);
    const int got = gzread(m_file, m_buffer.data() + used, kChunk);
    if (got < 0) {
        int status = Z_OK;
        const char* message = gzerror(m_file, &status);
        throw DataError(m_path + ": " +
                        (status == Z_ERRNO
                             ? std::string("read error")
                             : "the gzip stream is corrupt (" + std::string(message ? message : "") + ")"));
    }
    m_buffer.resize(used + static_cast<std::size_t>(got));
    if (got == 0) {
        m_end = true;
        // zlib reports a stream that breaks off only once its end is reached.
        int status = Z_OK;
        const char* message = gzerror(m_file, &status);
        if (status != Z_OK && status != Z_STREAM_END)
            throw DataError(m_path + ": the gzip stream breaks off (" + std::string(message ? message : "") + ")");
    }
    return got > 0;
}

bool TextLines::next(std::string& line)
{
    std::size_t newline = m_buffer.find('\n', m_at);
    while (newline == std::string::npos) {
        const std::size_t searched = m_buffer.size() - m_at;
        if (!fill())
            break;
        newline = m_buffer.find('\n', m_at + searched);
    }
    if (newline == std::string::npos && m_at >= m_buffer.size())
        return false;
    const std::size_t end = newline == std::string::npos ? m_buffer.size() : newline;
    line.assign(m_buffer, m_at, end - m_at);
    m_at = newline == std::string::npos ? m_buffer.size() : newline + 1;
    ++m_lineNumber;
    if (!line.empty() && line.back() == '\r')
        line.pop_back();
    if (m_lineNumber == 1 && line.starts_with("\xEF\xBB\xBF")) // a UTF-8 byte-order mark
        line.erase(0, 3);
    return true;
}

} // namespace mantissa
