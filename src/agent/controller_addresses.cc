#include "agent/controller_addresses.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace gangway::agent {

using std::chrono::milliseconds;

ControllerAddresses ControllerAddresses::Parse(const std::string& given,
                                               const std::string& ca_cert) {
  ControllerAddresses out;
  std::string_view list = given;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view url = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    Address a;
    a.url = std::string(url);
    a.tls = url.starts_with("https://");
    if (!a.tls && !url.starts_with("http://")) {
      throw std::runtime_error("--server " + a.url +
                               ": expected http://host:port or https://host:port");
    }
    if (!a.tls && !ca_cert.empty()) {
      throw std::runtime_error("--ca-cert is for an https:// server, and --server " + a.url +
                               " is not one");
    }
    url.remove_prefix(a.tls ? 8 : 7);
    while (url.ends_with('/')) url.remove_suffix(1);
    const size_t colon = url.rfind(':');
    a.host = std::string(url.substr(0, colon));
    a.port = a.tls ? 443 : 80;
    if (colon != std::string_view::npos) {
      const std::string port(url.substr(colon + 1));
      char* end = nullptr;
      const long p = std::strtol(port.c_str(), &end, 10);
      if (port.empty() || *end != '\0' || p <= 0 || p > 65535) {
        throw std::runtime_error("--server " + a.url + ": bad port '" + port + "'");
      }
      a.port = static_cast<int>(p);
    }
    if (a.host.empty()) throw std::runtime_error("--server " + a.url + ": no host");
    out.addresses_.push_back(std::move(a));
  }
  if (out.addresses_.empty()) throw std::runtime_error("--server: no controller address given");
  return out;
}

ControllerAddresses::ControllerAddresses(const ControllerAddresses& other)
    : addresses_(other.addresses_) {
  std::lock_guard lock(other.mu_);
  current_ = other.current_;
  highest_epoch_ = other.highest_epoch_;
}

ControllerAddresses& ControllerAddresses::operator=(const ControllerAddresses& other) {
  if (this == &other) return *this;
  std::scoped_lock lock(mu_, other.mu_);
  addresses_ = other.addresses_;
  current_ = other.current_;
  highest_epoch_ = other.highest_epoch_;
  return *this;
}

size_t ControllerAddresses::current() const {
  std::lock_guard lock(mu_);
  return current_;
}

void ControllerAddresses::TryAnother(size_t failed, const std::string& leader) {
  if (addresses_.size() < 2) return;
  std::lock_guard lock(mu_);
  if (current_ != failed) return;  // another thread moved on already
  size_t next = (failed + 1) % addresses_.size();
  for (size_t i = 0; i < addresses_.size(); ++i) {
    if (!leader.empty() && addresses_[i].url == leader) next = i;
  }
  if (next != failed) {
    spdlog::info("trying controller {} ({} did not lead or answer)", addresses_[next].url,
                 addresses_[failed].url);
  }
  current_ = next;
}

bool ControllerAddresses::TakeEpoch(int64_t epoch, size_t at, const char* what) {
  std::lock_guard lock(mu_);
  if (epoch < highest_epoch_) {
    spdlog::warn("{} {}: refused: the answer is of leader epoch {}, and epoch {} has led since",
                 what, addresses_[at].url, epoch, highest_epoch_);
    return false;
  }
  highest_epoch_ = epoch;
  return true;
}

milliseconds ControllerAddresses::MaxBackoff(milliseconds max) const {
  constexpr milliseconds kGroupMaxBackoff{500};
  return addresses_.size() > 1 ? std::min(max, kGroupMaxBackoff) : max;
}

}  // namespace gangway::agent
