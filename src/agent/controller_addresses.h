#ifndef GANGWAY_AGENT_CONTROLLER_ADDRESSES_H_
#define GANGWAY_AGENT_CONTROLLER_ADDRESSES_H_

// The controllers an agent may talk to (`--server`, several for a group on etcd,
// docs/design/ha.md) and which of them it takes to lead now.
//
//   Parse          the comma-separated URLs, checked (scheme, host, port)
//   current        the index the agent sends to; Moved tells the threads to make a new client
//   TryAnother     after no answer or a 503 from `failed`: the leader it named if that is one
//                  of them, else the next in the list; nothing with one controller
//   TakeEpoch      the leader epoch of an answer: false for one below the highest seen (a
//                  deposed leader's; not acted on)
//
// Invariants: at least one address; current() < size(); the highest epoch never goes down.
// Thread safety: every method may be called from any thread; one lock of its own guards the
// current index and the epoch (a leaf: nothing else is taken while it is held).

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace gangway::agent {

class ControllerAddresses {
 public:
  struct Address {
    std::string url;
    std::string host;
    int port = 0;
    bool tls = false;
  };

  // Throws std::runtime_error naming a URL that is not http(s)://host[:port], or an https
  // CA (`ca_cert`) given for an http:// one.
  static ControllerAddresses Parse(const std::string& list, const std::string& ca_cert);

  size_t size() const { return addresses_.size(); }
  const Address& at(size_t i) const { return addresses_[i]; }
  size_t current() const;
  void TryAnother(size_t failed, const std::string& leader);
  bool TakeEpoch(int64_t epoch, size_t at, const char* what);
  // The longest wait between retries: `max`, or at most 500 ms with several controllers (a
  // failed request there usually means the leader changed, and the agent must find the next
  // one well within the node timeout).
  std::chrono::milliseconds MaxBackoff(std::chrono::milliseconds max) const;

  ControllerAddresses(const ControllerAddresses& other);
  ControllerAddresses& operator=(const ControllerAddresses& other);

 private:
  ControllerAddresses() = default;

  std::vector<Address> addresses_;  // set by Parse, then read-only
  mutable std::mutex mu_;           // guards what follows
  size_t current_ = 0;
  int64_t highest_epoch_ = 0;
};

}  // namespace gangway::agent

#endif  // GANGWAY_AGENT_CONTROLLER_ADDRESSES_H_
