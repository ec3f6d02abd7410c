#include "controller/state_snapshot.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace gangway::controller {
namespace {

using nlohmann::json;

constexpr int kFormat = 1;
// xz level 1: several times smaller; higher levels cost several times the time for a few
// percent.
constexpr uint32_t kLevel = 1;
// Text gathered before it is compressed, and the output buffer of one lzma_code call.
constexpr size_t kChunk = 1 << 20;

std::string XzError(lzma_ret ret) { return "xz error " + std::to_string(static_cast<int>(ret)); }

std::string Dump(const json& j) {
  // Bytes that are not UTF-8 (none the controller writes) become U+FFFD, as in log entries.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

SnapshotWriter::SnapshotWriter(size_t part_bytes, std::function<void(const Header&)> on_begin,
                               std::function<void(std::string)> on_part)
    : part_bytes_(part_bytes), on_begin_(std::move(on_begin)), on_part_(std::move(on_part)) {
  const lzma_ret ret = lzma_easy_encoder(&stream_, kLevel, LZMA_CHECK_CRC64);
  if (ret != LZMA_OK) throw StoreError("cannot start compressing a snapshot: " + XzError(ret));
}

SnapshotWriter::~SnapshotWriter() { lzma_end(&stream_); }

void SnapshotWriter::Begin(const Header& h) {
  if (on_begin_) on_begin_(h);
  Line(Dump({{"format", kFormat},
             {"seq", h.log_seq},
             {"job_id_floor", h.job_id_floor},
             {"event_seq", h.event_seq}}));
}

void SnapshotWriter::Job(uint64_t id, std::string_view state, std::string_view user,
                         std::string_view doc) {
  Line(Dump({"j", id, state, user, doc}));
}

void SnapshotWriter::Node(std::string_view name, std::string_view doc) {
  Line(Dump({"n", name, doc}));
}

void SnapshotWriter::Event(const StoredEvent& e) {
  Line(Dump({"e", e.seq, e.time, e.job, e.type, e.message}));
}

void SnapshotWriter::Line(const std::string& line) {
  text_ += line;
  text_ += '\n';
  json_bytes_ += line.size() + 1;
  if (text_.size() >= kChunk) Compress(LZMA_RUN);
}

void SnapshotWriter::Compress(lzma_action action) {
  std::string out(kChunk, '\0');
  stream_.next_in = reinterpret_cast<const uint8_t*>(text_.data());
  stream_.avail_in = text_.size();
  for (;;) {
    stream_.next_out = reinterpret_cast<uint8_t*>(out.data());
    stream_.avail_out = out.size();
    const lzma_ret ret = lzma_code(&stream_, action);
    if (ret != LZMA_OK && ret != LZMA_STREAM_END) {
      throw StoreError("compressing a snapshot failed: " + XzError(ret));
    }
    pending_.append(out.data(), out.size() - stream_.avail_out);
    while (pending_.size() >= part_bytes_) {
      ++parts_;
      bytes_ += part_bytes_;
      on_part_(pending_.substr(0, part_bytes_));
      pending_.erase(0, part_bytes_);
    }
    if (ret == LZMA_STREAM_END || (action == LZMA_RUN && stream_.avail_in == 0)) break;
  }
  text_.clear();
}

void SnapshotWriter::Finish() {
  Compress(LZMA_FINISH);
  if (!pending_.empty() || parts_ == 0) {
    ++parts_;
    bytes_ += pending_.size();
    on_part_(std::move(pending_));
    pending_.clear();
  }
}

SnapshotReader::SnapshotReader(StateRows& rows) : rows_(rows) {
  const lzma_ret ret = lzma_stream_decoder(&stream_, UINT64_MAX, 0);
  if (ret != LZMA_OK) throw StoreError("cannot start reading a snapshot: " + XzError(ret));
}

SnapshotReader::~SnapshotReader() { lzma_end(&stream_); }

void SnapshotReader::Feed(std::string_view bytes) {
  if (ended_ && !bytes.empty()) throw StoreError("a snapshot goes on past the end of its stream");
  Decode(bytes, LZMA_RUN);
}

void SnapshotReader::Finish() {
  if (!ended_) Decode({}, LZMA_FINISH);
  if (!ended_) throw StoreError("a snapshot's xz stream is cut short");
  if (!text_.empty()) throw StoreError("a snapshot ends inside a line");
  if (!began_) throw StoreError("a snapshot holds no header");
}

void SnapshotReader::Decode(std::string_view in, lzma_action action) {
  std::string out(kChunk, '\0');
  stream_.next_in = reinterpret_cast<const uint8_t*>(in.data());
  stream_.avail_in = in.size();
  for (;;) {
    stream_.next_out = reinterpret_cast<uint8_t*>(out.data());
    stream_.avail_out = out.size();
    const lzma_ret ret = lzma_code(&stream_, action);
    text_.append(out.data(), out.size() - stream_.avail_out);
    Lines();
    if (ret == LZMA_STREAM_END) {
      ended_ = true;
      if (stream_.avail_in != 0) throw StoreError("a snapshot goes on past the end of its stream");
      return;
    }
    if (ret == LZMA_BUF_ERROR && action == LZMA_FINISH) return;  // cut short: Finish says so
    if (ret != LZMA_OK) throw StoreError("a snapshot is damaged: " + XzError(ret));
    if (stream_.avail_in == 0 && stream_.avail_out != 0) return;
  }
}

void SnapshotReader::Lines() {
  size_t start = 0;
  for (size_t end; (end = text_.find('\n', start)) != std::string::npos; start = end + 1) {
    ++line_number_;
    Row(std::string_view(text_).substr(start, end - start));
  }
  text_.erase(0, start);
}

void SnapshotReader::Row(std::string_view line) {
  const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  const std::string where = "line " + std::to_string(line_number_) + " of a snapshot";
  try {
    if (!began_) {
      if (!j.is_object()) throw StoreError(where + " is not its header");
      if (j.at("format").get<int>() != kFormat) {
        throw StoreError("a snapshot is of format " + j.at("format").dump() +
                         ", which this build does not read");
      }
      header_ = {.log_seq = j.at("seq").get<int64_t>(),
                 .job_id_floor = j.at("job_id_floor").get<uint64_t>(),
                 .event_seq = j.at("event_seq").get<int64_t>()};
      began_ = true;
      rows_.Begin(header_);
      return;
    }
    if (!j.is_array() || j.empty()) throw StoreError(where + " is not a row");
    const std::string kind = j.at(0).get<std::string>();
    if (kind == "j" && j.size() == 5) {
      rows_.Job(j[1].get<uint64_t>(), j[2].get<std::string>(), j[3].get<std::string>(),
                j[4].get<std::string>());
    } else if (kind == "n" && j.size() == 3) {
      rows_.Node(j[1].get<std::string>(), j[2].get<std::string>());
    } else if (kind == "e" && j.size() == 6) {
      rows_.Event({j[1].get<int64_t>(), j[2].get<int64_t>(), j[3].get<uint64_t>(),
                   j[4].get<std::string>(), j[5].get<std::string>()});
    } else {
      throw StoreError(where + " is a row of unknown kind or length");
    }
  } catch (const json::exception& e) {
    throw StoreError(where + " holds a malformed field: " + e.what());
  }
}

}  // namespace gangway::controller
