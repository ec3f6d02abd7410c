#ifndef GANGWAY_CONTROLLER_STATE_SNAPSHOT_H_
#define GANGWAY_CONTROLLER_STATE_SNAPSHOT_H_

// The bytes of a snapshot of the replicated state log (replicated_store.h): the rows of a copy
// (StateRows) as JSON lines, compressed with xz (the job documents are JSON and much alike: a
// hundred MB of them shrink to a few MB).
//
//   {"format":1,"seq":S,"job_id_floor":F,"event_seq":Q}
//   ["j",id,state,user,doc]           a job, by id
//   ["n",name,doc]                    a node, by name
//   ["e",seq,time,job,type,message]   an event, by seq
//
// Both ways stream: the writer compresses as rows come and hands out parts as they fill, the
// reader decompresses parts as they come and hands out rows, so neither holds the state whole
// (a million jobs are gigabytes of JSON). The reader checks the xz stream's own checksum
// (CRC64), that the stream ends, and every line, and throws StoreError naming what is wrong:
// with SqliteStore::ReplaceWith, a snapshot is applied whole or not at all.
//
// Threads: an object is used by one thread at a time.

#include <lzma.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "controller/sqlite_store.h"

namespace gangway::controller {

class SnapshotWriter final : public StateRows {
 public:
  // `on_begin` sees the header before anything is written (it may throw to stop the rows);
  // `on_part` gets each part of `part_bytes` as it fills, and the last, shorter one, at Finish.
  SnapshotWriter(size_t part_bytes, std::function<void(const Header&)> on_begin,
                 std::function<void(std::string part)> on_part);
  ~SnapshotWriter() override;
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  void Begin(const Header& header) override;
  void Job(uint64_t id, std::string_view state, std::string_view user,
           std::string_view doc) override;
  void Node(std::string_view name, std::string_view doc) override;
  void Event(const StoredEvent& event) override;
  // Ends the stream and hands out the last part.
  void Finish();

  size_t json_bytes() const { return json_bytes_; }  // before compression
  size_t bytes() const { return bytes_; }            // after, in every part
  size_t parts() const { return parts_; }

 private:
  void Line(const std::string& line);
  void Compress(lzma_action action);

  size_t part_bytes_;
  std::function<void(const Header&)> on_begin_;
  std::function<void(std::string)> on_part_;
  lzma_stream stream_ = LZMA_STREAM_INIT;
  std::string text_;     // lines not compressed yet
  std::string pending_;  // compressed bytes not handed out yet
  size_t json_bytes_ = 0;
  size_t bytes_ = 0;
  size_t parts_ = 0;
};

class SnapshotReader {
 public:
  explicit SnapshotReader(StateRows& rows);
  ~SnapshotReader();
  SnapshotReader(const SnapshotReader&) = delete;
  SnapshotReader& operator=(const SnapshotReader&) = delete;

  // The next bytes of the snapshot, in order.
  void Feed(std::string_view bytes);
  // Throws StoreError unless the stream ended whole after a header and whole lines.
  void Finish();
  // The header read (zero before it).
  const StateRows::Header& header() const { return header_; }

 private:
  void Decode(std::string_view in, lzma_action action);
  void Lines();
  void Row(std::string_view line);

  StateRows& rows_;
  lzma_stream stream_ = LZMA_STREAM_INIT;
  bool ended_ = false;
  bool began_ = false;
  size_t line_number_ = 0;
  std::string text_;  // decompressed bytes not yet split into lines
  StateRows::Header header_;
};

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_STATE_SNAPSHOT_H_
