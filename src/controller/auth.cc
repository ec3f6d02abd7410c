#include "controller/auth.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>

#include "formats/yaml_reader.h"

namespace gangway::controller {
namespace {

std::string ReadOrCreateToken(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string token;
  if (in && std::getline(in, token) && token.size() >= 16) return token;
  token = NewToken();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot write " + path.string());
  const std::string line = token + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::fsync(fd);
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot write " + path.string());
  return token;
}

// `unix: agent`, or `unix: {uid, gid, groups, allowRoot}`.
std::optional<UnixAccount> ReadUnixAccount(formats::Context& ctx, const formats::Field& f) {
  if (f.node.IsScalar()) {
    auto v = formats::ReadScalar(ctx, f);
    if (!v) return std::nullopt;
    if (*v != "agent") {
      ctx.Error(f, "'" + *v + "' is not a Unix account; give {uid, gid} or agent");
      return std::nullopt;
    }
    return UnixAccount{.agent = true};
  }
  if (!f.node.IsMap()) {
    ctx.Error(f, "expected {uid, gid, groups} or agent");
    return std::nullopt;
  }
  formats::MapReader m(ctx, f);
  UnixAccount out;
  constexpr int64_t kMaxId = 4294967294;  // (uid_t)-1 means "unchanged" to the kernel
  bool ok = true;
  auto id = [&](const char* key, uint32_t& into) {
    if (auto field = m.Take(key)) {
      if (auto v = formats::ReadInt(ctx, *field, 0, kMaxId)) {
        into = static_cast<uint32_t>(*v);
        return;
      }
    } else {
      ctx.Error(f, std::string("a Unix account needs a ") + key);
    }
    ok = false;
  };
  id("uid", out.uid);
  id("gid", out.gid);
  if (auto g = m.Take("groups")) {
    for (const formats::Field& item : formats::ReadList(ctx, *g)) {
      if (auto v = formats::ReadInt(ctx, item, 0, kMaxId)) {
        out.groups.push_back(static_cast<uint32_t>(*v));
      } else {
        ok = false;
      }
    }
  }
  if (auto r = m.Take("allowRoot")) {
    if (auto v = formats::ReadBool(ctx, *r)) out.allow_root = *v;
  }
  m.Finish();
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace

formats::Expected<UnixAccount> UnixAccounts::For(std::string_view user) const {
  if (!run_as_submitter) return UnixAccount{.agent = true};
  auto it = by_user.find(user);
  if (it == by_user.end()) {
    return formats::Fail("user: " + std::string(user) +
                         " has no Unix account to run jobs as; an admin maps them in the auth "
                         "file (users[].unix: {uid, gid}, or unix: agent)");
  }
  const UnixAccount& a = it->second;
  if (!a.agent && (a.uid == 0 || a.gid == 0) && !a.allow_root) {
    return formats::Fail("user: " + std::string(user) +
                         " is mapped to uid or gid 0, and jobs do not run as root unless an "
                         "admin sets allowRoot: true for them in the auth file");
  }
  return a;
}

bool SameToken(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |=
        static_cast<unsigned>(static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]));
  }
  return diff == 0;
}

std::string TokenDigest(std::string_view token) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(token.data(), token.size(), md, &len, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 is not available from OpenSSL");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 0xf]);
  }
  return out;
}

const Identity* AuthConfig::Find(std::string_view token) const {
  if (token.empty()) return nullptr;
  const Identity* found = nullptr;
  for (const auto& [t, id] : tokens) {
    if (SameToken(t, token)) found = &id;
  }
  return found;
}

bool AuthConfig::IsJoinToken(std::string_view token) const {
  return !join_token.empty() && SameToken(join_token, token);
}

std::string NewToken() {
  std::random_device rd;
  std::ostringstream o;
  for (int i = 0; i < 4; ++i) {
    o << std::hex;
    o.width(8);
    o.fill('0');
    o << rd();
  }
  return o.str();
}

formats::ParseResult<AuthConfig> ParseAuthFile(std::string_view text, std::string_view file_name) {
  formats::Context ctx{std::string(file_name)};
  auto doc = formats::LoadDocument(ctx, text);
  if (!doc) return ctx.TakeErrors();
  AuthConfig out;
  formats::MapReader top(ctx, *doc);
  if (auto users = top.Take("users")) {
    for (const formats::Field& u : formats::ReadList(ctx, *users)) {
      formats::MapReader m(ctx, u);
      Identity id;
      std::string token;
      if (auto f = m.Take("name")) {
        if (auto v = formats::ReadName(ctx, *f)) id.user = *v;
      } else {
        ctx.Error(u, "a user needs a name");
      }
      if (auto f = m.Take("token")) {
        if (auto v = formats::ReadScalar(ctx, *f)) {
          if (v->size() < 16) {
            ctx.Error(*f, "tokens must be at least 16 characters");
          } else if (out.tokens.contains(*v)) {
            ctx.Error(*f, "this token is already given to another user");
          } else {
            token = *v;
          }
        }
      } else {
        ctx.Error(u, "a user needs a token");
      }
      if (auto f = m.Take("role")) {
        if (auto v = formats::ReadScalar(ctx, *f)) {
          if (*v == "admin") {
            id.admin = true;
          } else if (*v != "user") {
            ctx.Error(*f, "'" + *v + "' is not a role; use admin or user");
          }
        }
      }
      if (auto f = m.Take("unix")) {
        if (std::optional<UnixAccount> account = ReadUnixAccount(ctx, *f)) {
          if (!id.user.empty()) out.unix.by_user.insert_or_assign(id.user, *account);
        }
      }
      m.Finish();
      if (!token.empty() && !id.user.empty()) out.tokens.emplace(token, id);
    }
  }
  if (auto f = top.Take("runJobsAs")) {
    if (auto v = formats::ReadScalar(ctx, *f)) {
      if (*v == "submitter") {
        out.unix.run_as_submitter = true;
      } else if (*v != "agent") {
        ctx.Error(*f, "'" + *v + "' is not a choice; use submitter or agent");
      }
    }
  }
  if (auto f = top.Take("joinToken")) {
    if (auto v = formats::ReadScalar(ctx, *f)) {
      if (v->size() < 16) {
        ctx.Error(*f, "the join token must be at least 16 characters");
      } else {
        out.join_token = *v;
      }
    }
  } else {
    ctx.Error(doc->mark, "joinToken", "the auth file needs a joinToken for agents");
  }
  top.Finish();
  if (ctx.failed()) return ctx.TakeErrors();
  return out;
}

AuthConfig LoadOrCreateDefaultAuth(const std::filesystem::path& data_dir) {
  std::filesystem::create_directories(data_dir);
  AuthConfig out;
  out.tokens.emplace(ReadOrCreateToken(data_dir / "admin.token"), Identity{"admin", true});
  out.join_token = ReadOrCreateToken(data_dir / "join.token");
  return out;
}

}  // namespace gangway::controller
