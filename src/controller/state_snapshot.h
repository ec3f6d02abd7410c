#ifndef GANGWAY_CONTROLLER_STATE_SNAPSHOT_H_
#define GANGWAY_CONTROLLER_STATE_SNAPSHOT_H_

// A StateImage as the bytes of a snapshot of the replicated state log (replicated_store.h):
// JSON, compressed with xz (the job documents are JSON too and shrink several times over).
//
//   {"format":1,"seq":S,"job_id_floor":F,"event_seq":Q,
//    "jobs":[[id,state,user,doc],...],"nodes":[[name,doc],...],
//    "events":[[seq,time,job,type,message],...]}
//
// Decoding checks the xz stream's own checksum (CRC64) and every field, and throws StoreError
// naming what is wrong: a snapshot is applied whole or not at all. Stateless; any thread.

#include <cstdint>
#include <string>

#include "controller/sqlite_store.h"

namespace gangway::controller {

struct EncodedSnapshot {
  std::string bytes;      // what is stored
  size_t json_bytes = 0;  // before compression
};

EncodedSnapshot EncodeSnapshot(const StateImage& image);
StateImage DecodeSnapshot(const std::string& bytes);

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_STATE_SNAPSHOT_H_
