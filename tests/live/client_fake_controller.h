#ifndef GANGWAY_TESTS_LIVE_CLIENT_FAKE_CONTROLLER_H_
#define GANGWAY_TESTS_LIVE_CLIENT_FAKE_CONTROLLER_H_

// A stand-in for the controller's User API (docs/design/live-system.md) on 127.0.0.1, port 0,
// answering from canned routes and recording every request; and a runner for the real
// `gangway` binary in a scratch directory with a controlled environment.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace gangway::client::testing {

struct Recorded {
  std::string method;
  std::string path;
  std::multimap<std::string, std::string> params;
  std::string authorization;
  std::string content_type;
  std::string body;

  std::string Param(const std::string& key) const {
    auto it = params.find(key);
    return it == params.end() ? std::string() : it->second;
  }
  bool HasParam(const std::string& key) const { return params.contains(key); }
};

class FakeController {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  FakeController() {
    auto dispatch = [this](const httplib::Request& req, httplib::Response& res) {
      Handler handler;
      {
        std::lock_guard<std::mutex> lock(mu_);
        Recorded r{.method = req.method,
                   .path = req.path,
                   .authorization = req.get_header_value("Authorization"),
                   .content_type = req.get_header_value("Content-Type"),
                   .body = req.body};
        for (const auto& [k, v] : req.params) r.params.emplace(k, v);
        requests_.push_back(std::move(r));
        auto it = routes_.find(req.method + " " + req.path);
        if (it != routes_.end()) handler = it->second;
      }
      if (handler) {
        handler(req, res);
      } else {
        res.status = 404;
        res.set_content(
            R"({"error": {"code": "not_found", "message": "no route )" + req.path + R"("}})",
            "application/json");
      }
    };
    server_.Get(".*", dispatch);
    server_.Post(".*", dispatch);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeController() {
    server_.stop();
    thread_.join();
  }
  FakeController(const FakeController&) = delete;
  FakeController& operator=(const FakeController&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

  void On(const std::string& method_and_path, Handler handler) {
    std::lock_guard<std::mutex> lock(mu_);
    routes_[method_and_path] = std::move(handler);
  }
  // Answers with `status` and the JSON `body`.
  void Reply(const std::string& method_and_path, int status, const nlohmann::json& body) {
    const std::string text = body.dump();
    On(method_and_path, [status, text](const httplib::Request&, httplib::Response& res) {
      res.status = status;
      res.set_content(text, "application/json");
    });
  }
  void ReplyError(const std::string& method_and_path, int status, const std::string& code,
                  const std::string& message, const std::string& field = "") {
    nlohmann::json err = {{"code", code}, {"message", message}};
    if (!field.empty()) err["field"] = field;
    Reply(method_and_path, status, {{"error", err}});
  }

  std::vector<Recorded> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  std::vector<Recorded> requests(const std::string& method, const std::string& path) const {
    std::vector<Recorded> out;
    for (const Recorded& r : requests()) {
      if (r.method == method && r.path == path) out.push_back(r);
    }
    return out;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::map<std::string, Handler> routes_;
  std::vector<Recorded> requests_;
};

// A port on 127.0.0.1 where nothing listens (bound, then closed).
inline int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  return ntohs(addr.sin_port);
}

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A scratch directory, the working directory of the gangway processes it runs. GANGWAY_SERVER
// and GANGWAY_TOKEN are unset unless given in `env`.
class Scratch {
 public:
  Scratch() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gangway-client-XXXXXX").string();
    EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  const std::filesystem::path& dir() const { return dir_; }

  std::string Write(const std::string& name, const std::string& text) const {
    std::filesystem::path p = dir_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }

  Outcome Gangway(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env = {},
                  const std::string& stdin_text = "") const {
    std::string cmd = "cd " + Quote(dir_.string()) + " && env -u GANGWAY_SERVER -u GANGWAY_TOKEN";
    for (const auto& [k, v] : env) cmd += " " + Quote(k + "=" + v);
    cmd += " " + Quote(GANGWAY_BINARY);
    for (const std::string& a : args) cmd += " " + Quote(a);
    const std::filesystem::path out = dir_ / ".stdout";
    const std::filesystem::path err = dir_ / ".stderr";
    const std::filesystem::path in = dir_ / ".stdin";
    std::ofstream(in) << stdin_text;
    cmd += " <" + Quote(in.string()) + " >" + Quote(out.string()) + " 2>" + Quote(err.string());
    int status = std::system(cmd.c_str());
    Outcome r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Slurp(out);
    r.err = Slurp(err);
    return r;
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace gangway::client::testing

#endif  // GANGWAY_TESTS_LIVE_CLIENT_FAKE_CONTROLLER_H_
