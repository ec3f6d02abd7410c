#include "sim/line_reader.h"

#include <lzma.h>

#include <cerrno>
#include <cstring>

namespace gangway::sim {
namespace {

constexpr size_t kChunk = 1 << 16;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string LzmaErrorText(lzma_ret ret) {
  switch (ret) {
    case LZMA_MEM_ERROR:
      return "out of memory while decompressing";
    case LZMA_FORMAT_ERROR:
      return "not an xz file";
    case LZMA_OPTIONS_ERROR:
      return "unsupported xz options";
    case LZMA_DATA_ERROR:
      return "corrupt xz data";
    case LZMA_BUF_ERROR:
      return "truncated xz file";
    default:
      return std::string("xz decoder error ") + std::to_string(static_cast<int>(ret));
  }
}

}  // namespace

struct LineReader::Source {
  FILE* file = nullptr;
  bool xz = false;
  lzma_stream stream = LZMA_STREAM_INIT;
  std::vector<uint8_t> in = std::vector<uint8_t>(kChunk);
  bool input_done = false;  // fread reached the end of the file

  ~Source() {
    if (xz) lzma_end(&stream);
    if (file != nullptr) std::fclose(file);
  }
};

formats::Expected<LineReader> LineReader::Open(const std::string& path) {
  auto source = std::make_unique<Source>();
  source->file = std::fopen(path.c_str(), "rb");
  if (source->file == nullptr) {
    return formats::Fail(path + ": cannot open: " + std::strerror(errno));
  }
  if (EndsWith(path, ".xz")) {
    source->xz = true;
    lzma_ret ret = lzma_stream_decoder(&source->stream, UINT64_MAX, LZMA_CONCATENATED);
    if (ret != LZMA_OK) return formats::Fail(path + std::string(": ") + LzmaErrorText(ret));
  }
  return LineReader(path, std::move(source));
}

LineReader::LineReader(std::string path, std::unique_ptr<Source> source)
    : path_(std::move(path)), source_(std::move(source)) {}
LineReader::LineReader(LineReader&&) noexcept = default;
LineReader& LineReader::operator=(LineReader&&) noexcept = default;
LineReader::~LineReader() = default;

bool LineReader::Fill() {
  if (eof_ || error_) return false;
  Source& src = *source_;
  const size_t old = buffer_.size();
  if (!src.xz) {
    buffer_.resize(old + kChunk);
    size_t got = std::fread(buffer_.data() + old, 1, kChunk, src.file);
    buffer_.resize(old + got);
    if (got == 0) {
      if (std::ferror(src.file) != 0) error_ = path_ + ": read error";
      eof_ = true;
      return false;
    }
    return true;
  }
  // xz: decode until at least one byte comes out or the stream ends.
  while (true) {
    if (src.stream.avail_in == 0 && !src.input_done) {
      size_t got = std::fread(src.in.data(), 1, src.in.size(), src.file);
      if (got == 0 && std::ferror(src.file) != 0) {
        error_ = path_ + ": read error";
        return false;
      }
      src.stream.next_in = src.in.data();
      src.stream.avail_in = got;
      if (got < src.in.size()) src.input_done = true;
    }
    buffer_.resize(old + kChunk);
    src.stream.next_out = reinterpret_cast<uint8_t*>(buffer_.data() + old);
    src.stream.avail_out = kChunk;
    lzma_ret ret = lzma_code(&src.stream, src.input_done ? LZMA_FINISH : LZMA_RUN);
    const size_t produced = kChunk - src.stream.avail_out;
    buffer_.resize(old + produced);
    if (ret == LZMA_STREAM_END) {
      eof_ = true;
      return produced > 0;
    }
    if (ret != LZMA_OK) {
      error_ = path_ + std::string(": ") + LzmaErrorText(ret);
      return produced > 0;
    }
    if (produced > 0) return true;
  }
}

std::optional<std::string_view> LineReader::Next() {
  size_t scan_from = begin_;
  while (true) {
    size_t nl = buffer_.find('\n', scan_from);
    if (nl != std::string::npos) {
      std::string_view line(buffer_.data() + begin_, nl - begin_);
      begin_ = nl + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      ++line_number_;
      return line;
    }
    // Keep the partial line, drop what was returned before, and read more.
    buffer_.erase(0, begin_);
    begin_ = 0;
    scan_from = buffer_.size();
    if (!Fill()) break;
  }
  if (error_ || buffer_.empty()) return std::nullopt;
  std::string_view line(buffer_);
  begin_ = buffer_.size();
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  ++line_number_;
  return line;
}

}  // namespace gangway::sim
