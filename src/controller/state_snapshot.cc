#include "controller/state_snapshot.h"

#include <lzma.h>

#include <nlohmann/json.hpp>
#include <utility>

namespace gangway::controller {
namespace {

using nlohmann::json;

constexpr int kFormat = 1;
// xz level 1: about 60 MB/s of JSON on one core here, a few times smaller. Higher levels cost
// several times the time for a few percent.
constexpr uint32_t kLevel = 1;

std::string Compress(const std::string& in) {
  std::string out(lzma_stream_buffer_bound(in.size()), '\0');
  size_t written = 0;
  const lzma_ret ret = lzma_easy_buffer_encode(
      kLevel, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const uint8_t*>(in.data()), in.size(),
      reinterpret_cast<uint8_t*>(out.data()), &written, out.size());
  if (ret != LZMA_OK) {
    throw StoreError("compressing a snapshot failed (xz error " +
                     std::to_string(static_cast<int>(ret)) + ")");
  }
  out.resize(written);
  return out;
}

std::string Decompress(const std::string& in) {
  lzma_stream stream = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&stream, UINT64_MAX, 0) != LZMA_OK) {
    throw StoreError("cannot start an xz decoder for a snapshot");
  }
  std::string out;
  std::string chunk(1 << 20, '\0');
  stream.next_in = reinterpret_cast<const uint8_t*>(in.data());
  stream.avail_in = in.size();
  lzma_ret ret = LZMA_OK;
  while (ret == LZMA_OK) {
    stream.next_out = reinterpret_cast<uint8_t*>(chunk.data());
    stream.avail_out = chunk.size();
    ret = lzma_code(&stream, LZMA_FINISH);
    out.append(chunk.data(), chunk.size() - stream.avail_out);
  }
  lzma_end(&stream);
  if (ret != LZMA_STREAM_END) {
    throw StoreError("a snapshot is not a whole xz stream (xz error " +
                     std::to_string(static_cast<int>(ret)) + ")");
  }
  return out;
}

}  // namespace

EncodedSnapshot EncodeSnapshot(const StateImage& image) {
  json jobs = json::array();
  for (const StateImage::Job& j : image.jobs) jobs.push_back({j.id, j.state, j.user, j.doc});
  json nodes = json::array();
  for (const auto& [name, doc] : image.nodes) nodes.push_back({name, doc});
  json events = json::array();
  for (const StoredEvent& e : image.events) {
    events.push_back({e.seq, e.time, e.job, e.type, e.message});
  }
  const json doc = {{"format", kFormat},
                    {"seq", image.log_seq},
                    {"job_id_floor", image.job_id_floor},
                    {"event_seq", image.event_seq},
                    {"jobs", std::move(jobs)},
                    {"nodes", std::move(nodes)},
                    {"events", std::move(events)}};
  // Bytes that are not UTF-8 (none the controller writes) become U+FFFD, as in log entries.
  const std::string text = doc.dump(-1, ' ', false, json::error_handler_t::replace);
  return {.bytes = Compress(text), .json_bytes = text.size()};
}

StateImage DecodeSnapshot(const std::string& bytes) {
  const json doc = json::parse(Decompress(bytes), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) throw StoreError("a snapshot does not hold a JSON object");
  StateImage image;
  try {
    if (doc.at("format").get<int>() != kFormat) {
      throw StoreError("a snapshot is of format " + doc.at("format").dump() +
                       ", which this build does not read");
    }
    image.log_seq = doc.at("seq").get<int64_t>();
    image.job_id_floor = doc.at("job_id_floor").get<uint64_t>();
    image.event_seq = doc.at("event_seq").get<int64_t>();
    for (const json& j : doc.at("jobs")) {
      image.jobs.push_back({j.at(0).get<uint64_t>(), j.at(1).get<std::string>(),
                            j.at(2).get<std::string>(), j.at(3).get<std::string>()});
    }
    for (const json& n : doc.at("nodes")) {
      image.nodes.emplace_back(n.at(0).get<std::string>(), n.at(1).get<std::string>());
    }
    for (const json& e : doc.at("events")) {
      image.events.push_back({e.at(0).get<int64_t>(), e.at(1).get<int64_t>(),
                              e.at(2).get<uint64_t>(), e.at(3).get<std::string>(),
                              e.at(4).get<std::string>()});
    }
  } catch (const json::exception& e) {
    throw StoreError(std::string("a snapshot holds a malformed field: ") + e.what());
  }
  return image;
}

}  // namespace gangway::controller
