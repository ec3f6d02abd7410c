#include "formats/text.h"

#include <cstdint>

namespace gangway::formats {
namespace {

// The length of the well-formed UTF-8 sequence at `at`, or 0 if there is none.
size_t SequenceLength(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t b0 = byte(at);
  if (b0 < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80;  // the second byte's range, narrowed where RFC 3629 requires
  uint8_t hi = 0xbf;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    if (b0 == 0xe0) lo = 0xa0;  // overlong
    if (b0 == 0xed) hi = 0x9f;  // surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    if (b0 == 0xf0) lo = 0x90;  // overlong
    if (b0 == 0xf4) hi = 0x8f;  // past U+10FFFF
  } else {
    return 0;
  }
  if (at + n > text.size()) return 0;
  if (byte(at + 1) < lo || byte(at + 1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (byte(at + i) < 0x80 || byte(at + i) > 0xbf) return 0;
  }
  return n;
}

}  // namespace

std::optional<size_t> FirstInvalidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = SequenceLength(text, i);
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

TextPosition PositionOf(std::string_view text, size_t offset) {
  TextPosition p;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

std::string Quote(std::string_view text, size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  size_t i = 0;
  for (; i < text.size() && out.size() < max_bytes;) {
    const auto b = static_cast<uint8_t>(text[i]);
    const size_t n = SequenceLength(text, i);
    const bool c1 = n == 2 && b == 0xc2 && static_cast<uint8_t>(text[i + 1]) < 0xa0;
    if (n > 1 && !c1) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    const size_t skip = c1 ? 2 : 1;
    const uint8_t shown = c1 ? static_cast<uint8_t>(text[i + 1]) : b;
    if (n == 1 && b >= 0x20 && b != 0x7f) {
      out.push_back(static_cast<char>(b));
    } else if (b == '\n') {
      out += "\\n";
    } else if (b == '\t') {
      out += "\\t";
    } else if (b == '\r') {
      out += "\\r";
    } else {
      out += "\\x";
      out.push_back(kHex[shown >> 4U]);
      out.push_back(kHex[shown & 0xfU]);
    }
    i += skip;
  }
  if (i < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace gangway::formats
