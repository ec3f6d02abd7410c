#ifndef GANGWAY_CONTROLLER_ETCD_CLIENT_H_
#define GANGWAY_CONTROLLER_ETCD_CLIENT_H_

// A client of one etcd v3 member through its HTTP/JSON gateway (`/v3/...`, etcd 3.4 and
// later): what the controllers' high availability (issue 18) builds on. Keys and values are
// bytes (base64 on the wire); int64 fields come as strings and fields at their default value
// are left out, which the client reads as the defaults.
//
//   Put, Range, DeleteRange   the key space
//   LeaseGrant, KeepAlive, LeaseRevoke
//   CreateIfAbsent            a transaction: create `key` with a lease only if it does not
//                             exist (its create revision is 0), else read who holds it. The
//                             leader key's create revision is the leader's epoch.
//   PutIfCreatedAt            a transaction: put only while `guard` still has create revision
//                             `epoch` (the fence of every write of a leader).
//   CreateIfFenced            both at once: create `key` only if it does not exist and `guard`
//                             still has create revision `epoch` (a replicated log's append).
//   DeleteIfFenced            delete key ranges only while `guard` has create revision `epoch`
//                             (a replicated log's truncation).
//   Compact, Status, Defragment
//                             maintenance: drop the history before a revision; one member's
//                             database size; give one member's free pages back to the disk.
//
// Every call is one HTTP request with the given timeout to one member. Given several members,
// the client sends to the one that last answered, and on a transport error or an HTTP 5xx
// tries the others in turn (a write that timed out may still have been applied: the callers'
// transactions are idempotent for that). A transport error, an HTTP error or an answer that is
// not what etcd sends is an error naming the call and the members tried.
//
// Every call may be sent twice (a kept-alive connection that broke is retried once on a new
// one, and a timeout on one member is retried on the next): the transactions are written so
// that a repeat is harmless (an entry created once, a claim read back as its holder's).
//
// Thread safety: calls may come from any thread. Connections are kept alive and reused, one
// per call in flight, under a lock of their own; a copy of a client has its own.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model/result.h"

namespace httplib {
class Client;
}

namespace gangway::controller {

class EtcdClient {
 public:
  struct KeyValue {
    std::string key;
    std::string value;
    int64_t create_revision = 0;
    int64_t mod_revision = 0;
    int64_t version = 0;
    int64_t lease = 0;
  };
  template <typename T>
  using Result = core::Result<T, std::string>;

  // For https:// members: the CA that signed their certificates (PEM; empty: the system's),
  // and this client's certificate and key when the members ask for one
  // (--client-cert-auth). The members' certificates and host names are verified.
  struct Tls {
    std::string ca_file;
    std::string cert_file;
    std::string key_file;
  };
  // `endpoints`: http://host:port or https://host:port of members' client URLs, separated by
  // commas. Throws std::invalid_argument naming one that is not such a URL, or a certificate
  // given without its key.
  explicit EtcdClient(const std::string& endpoints,
                      std::chrono::milliseconds timeout = std::chrono::seconds(5), Tls tls = {});
  EtcdClient(const EtcdClient& other);
  EtcdClient& operator=(const EtcdClient&) = delete;

  // The revision of the store after the put.
  Result<int64_t> Put(const std::string& key, const std::string& value, int64_t lease = 0) const;
  // The key, or with `prefix` every key that starts with it, in key order.
  Result<std::vector<KeyValue>> Range(const std::string& key, bool prefix = false) const;
  // Keys in [from, end) in key order, at most `limit` (0: no limit); `more` when some were
  // left out.
  struct Page {
    std::vector<KeyValue> kvs;
    bool more = false;
  };
  Result<Page> RangeBetween(const std::string& from, const std::string& end,
                            int64_t limit = 0) const;
  // How many keys were deleted.
  Result<int64_t> DeleteRange(const std::string& key, bool prefix = false) const;

  // A lease of `ttl` seconds; its id.
  Result<int64_t> LeaseGrant(int64_t ttl) const;
  // Renews the lease; its TTL in seconds, 0 once it has expired (or never existed).
  Result<int64_t> KeepAlive(int64_t lease) const;
  Result<bool> LeaseRevoke(int64_t lease) const;

  struct Claim {
    bool created = false;  // this call created the key
    KeyValue holder;       // the key as it is now (created: with this call's value and lease)
  };
  Result<Claim> CreateIfAbsent(const std::string& key, const std::string& value,
                               int64_t lease) const;
  // True when the put was made; false when `guard` no longer has create revision `epoch`.
  Result<bool> PutIfCreatedAt(const std::string& guard, int64_t epoch, const std::string& key,
                              const std::string& value) const;

  struct FencedCreate {
    bool created = false;
    int64_t guard_revision = 0;        // not created: the guard's create revision now (0: gone)
    std::optional<KeyValue> existing;  // not created: the key, if it exists
  };
  Result<FencedCreate> CreateIfFenced(const std::string& guard, int64_t epoch,
                                      const std::string& key, const std::string& value) const;

  // Deletes every key in each [from, end) range in one transaction that succeeds only while
  // `guard` has create revision `epoch`; nullopt when it no longer has, else how many keys
  // went and the store's revision after the delete.
  struct Deleted {
    int64_t deleted = 0;
    int64_t revision = 0;
  };
  Result<std::optional<Deleted>> DeleteIfFenced(
      const std::string& guard, int64_t epoch,
      const std::vector<std::pair<std::string, std::string>>& ranges) const;

  // Drops every revision of every key before `revision` but the latest (etcd's compaction):
  // the pages they held become free for new writes. Compacting at or below a revision already
  // compacted is refused (the gateway's 400 for it, chunked with gRPC trailers, does not even
  // read as HTTP here: it comes back as a transport error).
  Result<bool> Compact(int64_t revision) const;
  // One member's (0-based, in the order given) database: the file's size and how much of it
  // holds live data (etcd 3.4 and later; the rest is free pages).
  struct MemberStatus {
    int64_t db_size = 0;
    int64_t db_size_in_use = 0;
  };
  Result<MemberStatus> Status(size_t member) const;
  // Rewrites one member's database without its free pages, waiting up to `timeout`. The
  // member answers nothing else while it runs (seconds for a large database): defragment one
  // member at a time.
  Result<bool> Defragment(size_t member,
                          std::chrono::milliseconds timeout = std::chrono::minutes(2)) const;
  size_t members() const { return members_.size(); }
  const std::string& member(size_t i) const { return members_[i].url; }

  // Ends a Watch from another thread. Reusable: Stop ends the watch running now, and any
  // started after it at once.
  class WatchStop {
   public:
    void Stop();

   private:
    friend class EtcdClient;
    std::mutex mu;
    httplib::Client* client = nullptr;  // the running watch's connection
    bool stopped = false;
  };
  // Watches every key in [from, end) on the member that last answered (after a watch that
  // could not reach it, the next one), over a connection of its own: calls `created` once etcd has
  // made the watch, then `changed` after each message that carries changes, on the calling thread,
  // until `stop` ends it, the stream breaks, or nothing comes for `idle`. Returns true when
  // stopped, else the error that ended it.
  Result<bool> Watch(const std::string& from, const std::string& end,
                     std::chrono::milliseconds idle, const std::function<void()>& created,
                     const std::function<void()>& changed, WatchStop& stop) const;

  // The members, as given, separated by commas.
  std::string endpoint() const;

 private:
  struct Member {
    std::string url;
    std::string host;
    int port = 0;
    bool tls = false;
  };
  Result<std::string> Post(const std::string& path, const std::string& body) const;
  // Idle kept-alive connections per member index, under their own lock. Take gives an idle
  // one (reused set) or a new one; with reused null, always a new one.
  struct Connections {
    Connections();
    ~Connections();  // where httplib::Client is complete
    std::unique_ptr<httplib::Client> Take(const Member& member, size_t at,
                                          std::chrono::milliseconds timeout, const Tls& tls,
                                          bool* reused);
    void Give(size_t at, std::unique_ptr<httplib::Client> client);
    std::mutex mu;
    std::map<size_t, std::vector<std::unique_ptr<httplib::Client>>> idle;
  };
  Result<std::string> PostTo(size_t at, const std::string& path, const std::string& body,
                             bool* another_may_answer) const;

  std::vector<Member> members_;
  mutable std::atomic<size_t> current_{0};  // the member that last answered
  std::chrono::milliseconds timeout_;
  Tls tls_;
  std::shared_ptr<Connections> connections_ = std::make_shared<Connections>();
};

// The end of the range of every key that starts with `prefix`.
std::string PrefixEnd(std::string prefix);

// Base64 as etcd's gateway writes bytes (standard alphabet, padded).
std::string Base64Encode(const std::string& bytes);
std::optional<std::string> Base64Decode(const std::string& text);

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_ETCD_CLIENT_H_
