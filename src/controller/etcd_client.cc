#include "controller/etcd_client.h"

#include <httplib.h>
#include <openssl/evp.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace gangway::controller {
namespace {

using nlohmann::json;

core::Failure<std::string> Err(std::string reason) { return {std::move(reason)}; }

// An int64 as the gateway writes it: a string, or absent for 0.
int64_t Int(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (!it->is_string()) throw std::invalid_argument(std::string(key) + " is not an integer");
  return std::stoll(it->get<std::string>());
}

EtcdClient::KeyValue ReadKeyValue(const json& kv) {
  EtcdClient::KeyValue out;
  auto key = Base64Decode(kv.value("key", ""));
  auto value = Base64Decode(kv.value("value", ""));
  if (!key || !value) throw std::invalid_argument("a key or value is not base64");
  out.key = std::move(*key);
  out.value = std::move(*value);
  out.create_revision = Int(kv, "create_revision");
  out.mod_revision = Int(kv, "mod_revision");
  out.version = Int(kv, "version");
  out.lease = Int(kv, "lease");
  return out;
}

json RangeRequest(const std::string& key, bool prefix) {
  json r = {{"key", Base64Encode(key)}};
  if (prefix) r["range_end"] = Base64Encode(PrefixEnd(key));
  return r;
}

}  // namespace

// The end of the range of every key starting with `prefix`: the prefix with its last byte
// below 0xff incremented, the bytes after it dropped; "\0" (every key) if there is none.
std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(prefix.back());
    if (last < 0xff) {
      ++last;
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

std::string Base64Encode(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::optional<std::string> Base64Decode(const std::string& text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out(3 * (text.size() / 4), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding as decoded zero bytes.
  size_t len = static_cast<size_t>(n);
  if (!text.empty() && text.back() == '=') --len;
  if (text.size() >= 2 && text[text.size() - 2] == '=') --len;
  out.resize(len);
  return out;
}

EtcdClient::EtcdClient(const std::string& endpoints, std::chrono::milliseconds timeout, Tls tls)
    : timeout_(timeout), tls_(std::move(tls)) {
  if (tls_.cert_file.empty() != tls_.key_file.empty()) {
    throw std::invalid_argument("an etcd client certificate and its key go together");
  }
  size_t start = 0;
  while (start <= endpoints.size()) {
    size_t comma = endpoints.find(',', start);
    if (comma == std::string::npos) comma = endpoints.size();
    Member m{.url = endpoints.substr(start, comma - start)};
    start = comma + 1;
    m.tls = m.url.starts_with("https://");
    if (!m.tls && !m.url.starts_with("http://")) {
      throw std::invalid_argument("etcd endpoint '" + m.url +
                                  "': expected http://host:port or https://host:port");
    }
    const std::string rest = m.url.substr(m.tls ? 8 : 7);
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      throw std::invalid_argument("etcd endpoint " + m.url + ": expected a host and a port");
    }
    m.host = rest.substr(0, colon);
    try {
      m.port = std::stoi(rest.substr(colon + 1));
    } catch (const std::exception&) {
      throw std::invalid_argument("etcd endpoint " + m.url + ": the port is not a number");
    }
    members_.push_back(std::move(m));
  }
}

EtcdClient::EtcdClient(const EtcdClient& other)
    : members_(other.members_),
      current_(other.current_.load()),
      timeout_(other.timeout_),
      tls_(other.tls_),
      connections_(std::make_shared<Connections>()) {}

std::string EtcdClient::endpoint() const {
  std::string out;
  for (const Member& m : members_) out += (out.empty() ? "" : ",") + m.url;
  return out;
}

EtcdClient::Connections::Connections() = default;
EtcdClient::Connections::~Connections() = default;

std::unique_ptr<httplib::Client> EtcdClient::Connections::Take(const Member& member, size_t at,
                                                               std::chrono::milliseconds timeout,
                                                               const Tls& tls, bool* reused) {
  if (reused != nullptr) {
    std::lock_guard lock(mu);
    auto& list = idle[at];
    if (!list.empty()) {
      auto client = std::move(list.back());
      list.pop_back();
      *reused = true;
      return client;
    }
  }
  if (reused != nullptr) *reused = false;
  std::unique_ptr<httplib::Client> client;
  if (member.tls) {
    // The universal client speaks TLS for https:// and verifies the member's certificate and
    // host name.
    client = std::make_unique<httplib::Client>(member.url, tls.cert_file, tls.key_file);
    if (!tls.ca_file.empty()) client->set_ca_cert_path(tls.ca_file.c_str());
    client->enable_server_certificate_verification(true);
  } else {
    client = std::make_unique<httplib::Client>(member.host, member.port);
  }
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(timeout - seconds);
  client->set_connection_timeout(seconds.count(), micros.count());
  client->set_read_timeout(seconds.count(), micros.count());
  client->set_write_timeout(seconds.count(), micros.count());
  client->set_keep_alive(true);
  client->set_tcp_nodelay(true);
  return client;
}

void EtcdClient::Connections::Give(size_t at, std::unique_ptr<httplib::Client> client) {
  constexpr size_t kIdlePerMember = 4;
  std::lock_guard lock(mu);
  auto& list = idle[at];
  if (list.size() < kIdlePerMember) list.push_back(std::move(client));
}

EtcdClient::Result<std::string> EtcdClient::PostTo(size_t at, const std::string& path,
                                                   const std::string& body,
                                                   bool* another_may_answer) const {
  const Member& member = members_[at];
  *another_may_answer = true;
  bool reused = false;
  auto http = connections_->Take(member, at, timeout_, tls_, &reused);
  auto res = http->Post(path, body, "application/json");
  if (!res && reused) {
    // The member closed the kept connection meanwhile (or it broke): once more on a new one.
    // Every call is safe to repeat (etcd_client.h).
    http = connections_->Take(member, at, timeout_, tls_, nullptr);
    res = http->Post(path, body, "application/json");
  }
  if (!res) return Err(member.url + ": " + httplib::to_string(res.error()));
  connections_->Give(at, std::move(http));
  if (res->status != 200) {
    // A 4xx is the request's own fault: another member would refuse it too.
    *another_may_answer = res->status >= 500;
    return Err(member.url + ": HTTP " + std::to_string(res->status) + ": " +
               res->body.substr(0, 200));
  }
  return res->body;
}

EtcdClient::Result<std::string> EtcdClient::Post(const std::string& path,
                                                 const std::string& body) const {
  const size_t first = current_.load();
  std::string errors;
  for (size_t i = 0; i < members_.size(); ++i) {
    const size_t at = (first + i) % members_.size();
    bool another_may_answer = true;
    auto answer = PostTo(at, path, body, &another_may_answer);
    if (answer.ok()) {
      current_.store(at);
      return answer;
    }
    errors += (errors.empty() ? "" : "; ") + answer.error();
    if (!another_may_answer) break;
  }
  return Err("etcd " + path + ": " + errors);
}

namespace {

// Parses an answer and runs `read` on it; a malformed one is an error naming `what`.
template <typename T, typename F>
core::Result<T, std::string> Read(const core::Result<std::string, std::string>& body,
                                  const std::string& what, F read) {
  if (!body.ok()) return core::Fail(body.error());
  json answer = json::parse(body.value(), nullptr, /*allow_exceptions=*/false);
  if (!answer.is_object()) return core::Fail(what + ": the answer is not a JSON object");
  try {
    return read(answer);
  } catch (const std::exception& e) {
    return core::Fail(what + ": unexpected answer (" + std::string(e.what()) + ")");
  }
}

}  // namespace

EtcdClient::Result<int64_t> EtcdClient::Put(const std::string& key, const std::string& value,
                                            int64_t lease) const {
  json req = {{"key", Base64Encode(key)}, {"value", Base64Encode(value)}};
  if (lease != 0) req["lease"] = std::to_string(lease);
  return Read<int64_t>(Post("/v3/kv/put", req.dump()), "put",
                       [](const json& a) { return Int(a.at("header"), "revision"); });
}

EtcdClient::Result<std::vector<EtcdClient::KeyValue>> EtcdClient::Range(const std::string& key,
                                                                        bool prefix) const {
  return Read<std::vector<KeyValue>>(Post("/v3/kv/range", RangeRequest(key, prefix).dump()),
                                     "range", [](const json& a) {
                                       std::vector<KeyValue> out;
                                       for (const json& kv : a.value("kvs", json::array()))
                                         out.push_back(ReadKeyValue(kv));
                                       return out;
                                     });
}

EtcdClient::Result<EtcdClient::Page> EtcdClient::RangeBetween(const std::string& from,
                                                              const std::string& end,
                                                              int64_t limit) const {
  json req = {{"key", Base64Encode(from)}, {"range_end", Base64Encode(end)}};
  if (limit > 0) req["limit"] = std::to_string(limit);
  return Read<Page>(Post("/v3/kv/range", req.dump()), "range", [](const json& a) {
    Page page;
    for (const json& kv : a.value("kvs", json::array())) page.kvs.push_back(ReadKeyValue(kv));
    page.more = a.value("more", false);
    return page;
  });
}

EtcdClient::Result<int64_t> EtcdClient::DeleteRange(const std::string& key, bool prefix) const {
  return Read<int64_t>(Post("/v3/kv/deleterange", RangeRequest(key, prefix).dump()), "deleterange",
                       [](const json& a) { return Int(a, "deleted"); });
}

EtcdClient::Result<int64_t> EtcdClient::LeaseGrant(int64_t ttl) const {
  return Read<int64_t>(Post("/v3/lease/grant", json{{"TTL", std::to_string(ttl)}}.dump()),
                       "lease grant", [](const json& a) {
                         if (a.contains("error") && !a["error"].is_null()) {
                           throw std::invalid_argument(a["error"].dump());
                         }
                         const int64_t id = Int(a, "ID");
                         if (id == 0) throw std::invalid_argument("no lease ID");
                         return id;
                       });
}

EtcdClient::Result<int64_t> EtcdClient::KeepAlive(int64_t lease) const {
  // A stream on the gateway: one request, one result.
  return Read<int64_t>(Post("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}}.dump()),
                       "lease keepalive", [](const json& a) { return Int(a.at("result"), "TTL"); });
}

EtcdClient::Result<bool> EtcdClient::LeaseRevoke(int64_t lease) const {
  return Read<bool>(Post("/v3/lease/revoke", json{{"ID", std::to_string(lease)}}.dump()),
                    "lease revoke", [](const json& a) { return a.contains("header"); });
}

EtcdClient::Result<EtcdClient::Claim> EtcdClient::CreateIfAbsent(const std::string& key,
                                                                 const std::string& value,
                                                                 int64_t lease) const {
  json put = {{"key", Base64Encode(key)}, {"value", Base64Encode(value)}};
  if (lease != 0) put["lease"] = std::to_string(lease);
  const json txn = {
      {"compare", {{{"target", "CREATE"}, {"key", Base64Encode(key)}, {"create_revision", "0"}}}},
      {"success", {{{"request_put", put}}, {{"request_range", RangeRequest(key, false)}}}},
      {"failure", {{{"request_range", RangeRequest(key, false)}}}}};
  return Read<Claim>(Post("/v3/kv/txn", txn.dump()), "txn", [](const json& a) {
    Claim claim;
    claim.created = a.value("succeeded", false);
    for (const json& r : a.value("responses", json::array())) {
      if (!r.contains("response_range")) continue;
      const json& kvs = r["response_range"].value("kvs", json::array());
      if (kvs.empty()) throw std::invalid_argument("the key is gone");
      claim.holder = ReadKeyValue(kvs.at(0));
    }
    return claim;
  });
}

EtcdClient::Result<bool> EtcdClient::PutIfCreatedAt(const std::string& guard, int64_t epoch,
                                                    const std::string& key,
                                                    const std::string& value) const {
  const json txn = {
      {"compare",
       {{{"target", "CREATE"},
         {"key", Base64Encode(guard)},
         {"create_revision", std::to_string(epoch)}}}},
      {"success",
       {{{"request_put", {{"key", Base64Encode(key)}, {"value", Base64Encode(value)}}}}}}};
  return Read<bool>(Post("/v3/kv/txn", txn.dump()), "txn",
                    [](const json& a) { return a.value("succeeded", false); });
}

EtcdClient::Result<EtcdClient::FencedCreate> EtcdClient::CreateIfFenced(
    const std::string& guard, int64_t epoch, const std::string& key,
    const std::string& value) const {
  const json txn = {
      {"compare",
       {{{"target", "CREATE"},
         {"key", Base64Encode(guard)},
         {"create_revision", std::to_string(epoch)}},
        {{"target", "CREATE"}, {"key", Base64Encode(key)}, {"create_revision", "0"}}}},
      {"success",
       {{{"request_put", {{"key", Base64Encode(key)}, {"value", Base64Encode(value)}}}}}},
      {"failure",
       {{{"request_range", RangeRequest(guard, false)}},
        {{"request_range", RangeRequest(key, false)}}}}};
  return Read<FencedCreate>(Post("/v3/kv/txn", txn.dump()), "txn", [](const json& a) {
    FencedCreate out;
    out.created = a.value("succeeded", false);
    if (out.created) return out;
    const json& responses = a.value("responses", json::array());
    if (responses.size() != 2) throw std::invalid_argument("expected two range answers");
    const json& guard_kvs = responses[0].at("response_range").value("kvs", json::array());
    if (!guard_kvs.empty()) out.guard_revision = ReadKeyValue(guard_kvs.at(0)).create_revision;
    const json& key_kvs = responses[1].at("response_range").value("kvs", json::array());
    if (!key_kvs.empty()) out.existing = ReadKeyValue(key_kvs.at(0));
    return out;
  });
}

EtcdClient::Result<std::optional<EtcdClient::Deleted>> EtcdClient::DeleteIfFenced(
    const std::string& guard, int64_t epoch,
    const std::vector<std::pair<std::string, std::string>>& ranges) const {
  json deletes = json::array();
  for (const auto& [from, end] : ranges) {
    deletes.push_back({{"request_delete_range",
                        {{"key", Base64Encode(from)}, {"range_end", Base64Encode(end)}}}});
  }
  const json txn = {{"compare",
                     {{{"target", "CREATE"},
                       {"key", Base64Encode(guard)},
                       {"create_revision", std::to_string(epoch)}}}},
                    {"success", std::move(deletes)}};
  return Read<std::optional<Deleted>>(
      Post("/v3/kv/txn", txn.dump()), "txn", [](const json& a) -> std::optional<Deleted> {
        if (!a.value("succeeded", false)) return std::nullopt;
        Deleted out{.revision = Int(a.at("header"), "revision")};
        for (const json& r : a.value("responses", json::array())) {
          if (r.contains("response_delete_range")) {
            out.deleted += Int(r["response_delete_range"], "deleted");
          }
        }
        return out;
      });
}

EtcdClient::Result<bool> EtcdClient::Compact(int64_t revision) const {
  return Read<bool>(Post("/v3/kv/compaction",
                         json{{"revision", std::to_string(revision)}, {"physical", true}}.dump()),
                    "compaction", [](const json& a) { return a.contains("header"); });
}

EtcdClient::Result<EtcdClient::MemberStatus> EtcdClient::Status(size_t member) const {
  if (member >= members_.size()) return Err("no etcd member " + std::to_string(member));
  bool another_may_answer = false;
  return Read<MemberStatus>(PostTo(member, "/v3/maintenance/status", "{}", &another_may_answer),
                            "status", [](const json& a) {
                              return MemberStatus{.db_size = Int(a, "dbSize"),
                                                  .db_size_in_use = Int(a, "dbSizeInUse")};
                            });
}

EtcdClient::Result<bool> EtcdClient::Defragment(size_t member,
                                                std::chrono::milliseconds timeout) const {
  if (member >= members_.size()) return Err("no etcd member " + std::to_string(member));
  // A connection of its own with the long timeout, not kept: the kept ones have the short one.
  auto http = connections_->Take(members_[member], member, timeout, tls_, nullptr);
  auto res = http->Post("/v3/maintenance/defragment", "{}", "application/json");
  Result<std::string> body = Err(members_[member].url + ": " + httplib::to_string(res.error()));
  if (res && res->status == 200) {
    body = res->body;
  } else if (res) {
    body = Err(members_[member].url + ": HTTP " + std::to_string(res->status) + ": " +
               res->body.substr(0, 200));
  }
  return Read<bool>(body, "defragment", [](const json& a) { return a.contains("header"); });
}

void EtcdClient::WatchStop::Stop() {
  std::lock_guard lock(mu);
  stopped = true;
  if (client != nullptr) client->stop();
}

EtcdClient::Result<bool> EtcdClient::Watch(const std::string& from, const std::string& end,
                                           std::chrono::milliseconds idle,
                                           const std::function<void()>& created,
                                           const std::function<void()>& changed,
                                           WatchStop& stop) const {
  const size_t at = current_.load();
  const Member& member = members_[at];
  auto http = connections_->Take(member, at, idle, tls_, nullptr);  // not kept: a stream
  {
    std::lock_guard lock(stop.mu);
    if (stop.stopped) return true;
    stop.client = http.get();
  }
  std::string pending;  // what came after the last newline
  std::string failure;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v3/watch";
  req.set_header("Content-Type", "application/json");
  req.body =
      json{{"create_request", {{"key", Base64Encode(from)}, {"range_end", Base64Encode(end)}}}}
          .dump();
  // The gateway streams one JSON message a line: {"result": {...}} or {"error": {...}}.
  req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    pending.append(data, size);
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
      const json message = json::parse(pending.substr(0, nl), nullptr, false);
      const json* result =
          message.is_object() && message.contains("result") ? &message["result"] : nullptr;
      if (result == nullptr || !result->is_object()) {
        failure = "watch: unexpected message " + pending.substr(0, std::min<size_t>(nl, 200));
        return false;
      }
      if (result->value("canceled", false)) {
        failure = "watch: canceled by etcd: " + result->value("cancel_reason", std::string());
        return false;
      }
      if (result->value("created", false)) created();
      if (result->contains("events")) changed();
    }
    return true;
  };
  auto res = http->send(req);
  bool stopped = false;
  {
    std::lock_guard lock(stop.mu);
    stop.client = nullptr;
    stopped = stop.stopped;
  }
  if (stopped) return true;
  // The next watch goes to the next member: this one may be down, and nothing else moves
  // this client on if the watch is all it is used for.
  if (!res && res.error() != httplib::Error::Read) current_.store((at + 1) % members_.size());
  if (!failure.empty()) return Err(member.url + ": " + failure);
  if (!res) return Err(member.url + ": watch: " + httplib::to_string(res.error()));
  return Err(member.url + ": watch: the stream ended (HTTP " + std::to_string(res->status) + ")");
}

}  // namespace gangway::controller
