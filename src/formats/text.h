#ifndef GANGWAY_FORMATS_TEXT_H_
#define GANGWAY_FORMATS_TEXT_H_

// Checks and conversions of untrusted text: whether it is UTF-8 (JSON documents, the store
// and every client assume it), and how to show it to a person without letting it rewrite a
// terminal or flood a message.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gangway::formats {

// The offset of the first byte that does not belong to a well-formed UTF-8 sequence
// (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF), or nullopt when all
// of `text` is UTF-8.
std::optional<size_t> FirstInvalidUtf8(std::string_view text);

// The 1-based line and column (in bytes) of `offset` in `text`.
struct TextPosition {
  int line = 1;
  int column = 1;
};
TextPosition PositionOf(std::string_view text, size_t offset);

// `text` made safe to print inside a message: control characters (C0, DEL, C1) and bytes that
// are not UTF-8 become escapes (\n, \t, \x1b), and anything past `max_bytes` of the result is
// cut with "..." and the original size. Valid non-ASCII characters are kept.
//   Quote("a\x1b[2Jb") == "a\\x1b[2Jb"
std::string Quote(std::string_view text, size_t max_bytes = 64);

}  // namespace gangway::formats

#endif  // GANGWAY_FORMATS_TEXT_H_
