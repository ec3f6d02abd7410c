#ifndef GANGWAY_SIM_LINE_READER_H_
#define GANGWAY_SIM_LINE_READER_H_

// Reads a text file line by line, decompressing `.xz` files on the fly with liblzma (streaming,
// bounded memory, no temporary files). Any other name is read as plain text.
//
//   auto reader = LineReader::Open("philly_jobs_pollux.csv.xz");
//   if (!reader.ok()) return reader.error();
//   while (std::optional<std::string_view> line = reader->Next()) { ... }
//   if (reader->error()) ...  // a read or decompression error ended the file early
//
// Lines are returned without their terminator ("\n" or "\r\n"); a last line without a newline
// is returned too. The view stays valid until the next call to Next().
//
// Thread safety: none; one reader per thread.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/expected.h"

namespace gangway::sim {

class LineReader {
 public:
  // Fails with a sentence naming the file if it cannot be opened or the decoder not started.
  static formats::Expected<LineReader> Open(const std::string& path);

  LineReader(LineReader&&) noexcept;
  LineReader& operator=(LineReader&&) noexcept;
  ~LineReader();

  // The next line, or nullopt at the end of the file or after an error (see error()).
  std::optional<std::string_view> Next();

  // 1-based number of the line last returned by Next(); 0 before the first.
  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }
  // Set when reading stopped because of an I/O or decompression error.
  const std::optional<std::string>& error() const { return error_; }

 private:
  struct Source;  // the file and, for .xz, the lzma stream
  explicit LineReader(std::string path, std::unique_ptr<Source> source);
  // Appends more decoded bytes to buffer_; false at the end of input or on error.
  bool Fill();

  std::string path_;
  std::unique_ptr<Source> source_;
  std::string buffer_;  // decoded bytes; the last line returned and what follows it
  size_t begin_ = 0;    // start of the unread part of buffer_
  int64_t line_number_ = 0;
  bool eof_ = false;
  std::optional<std::string> error_;
};

}  // namespace gangway::sim

#endif  // GANGWAY_SIM_LINE_READER_H_
