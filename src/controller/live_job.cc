#include "controller/live_job.h"

#include <algorithm>
#include <csignal>

#include "formats/job_reader.h"
#include "formats/text.h"
#include "formats/yaml_reader.h"
#include "protocol/mount_roots.h"

namespace gangway::controller {
namespace {

using formats::Context;
using formats::Field;
using formats::MapReader;

constexpr size_t kMaxArgs = 4096;
constexpr size_t kMaxEnv = 1024;
// execve(2) refuses (E2BIG) one argument or NAME=value string of 128 KiB or more
// (MAX_ARG_STRLEN), and an argument list and environment together over a quarter of the stack
// limit (2 MiB under the default 8 MiB). A job's own strings may take half of that; the rest
// is for the variables Gangway and the agent add.
constexpr size_t kMaxArgBytes = (size_t{128} << 10) - 1;
constexpr size_t kMaxArgvEnvBytes = size_t{1} << 20;
constexpr size_t kMaxMounts = 64;

bool ValidEnvName(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      return false;
  }
  return true;
}

// An absolute path into `out`.
void ReadWorkdir(Context& ctx, const Field& f, std::string& out) {
  if (auto s = formats::ReadScalar(ctx, f)) {
    if (!s->starts_with("/")) {
      ctx.Error(f, "the working directory must be an absolute path");
    } else {
      out = *s;
    }
  }
}

// NAME: value pairs into `env`.
void ReadEnv(Context& ctx, const Field& field, std::map<std::string, std::string>& env) {
  const Field* f = &field;
  if (!f->node.IsMap()) {
    ctx.Error(*f, "expected a mapping of NAME: value, got " +
                      std::string(formats::DescribeKind(f->node)));
  } else {
    for (const auto& entry : f->node) {
      std::string key = entry.first.Scalar();
      Field value{entry.second, entry.second.Mark(), formats::ChildPath(f->path, key)};
      if (!ValidEnvName(key)) {
        ctx.Error(value, "'" + formats::Quote(key) +
                             "' is not a valid environment variable name (letters, digits and "
                             "_, not starting with a digit)");
      } else if (key.starts_with("GANGWAY_")) {
        ctx.Error(value, "variables starting with GANGWAY_ are set by Gangway");
      } else if (auto v = formats::ReadScalar(ctx, value)) {
        env[key] = *v;
      }
    }
    if (env.size() > kMaxEnv) {
      ctx.Error(*f, "more than " + std::to_string(kMaxEnv) + " variables");
    }
  }
}

// A host path of a mount into `out`: normal form (protocol::CheckHostPath); a target may not
// be "/".
void ReadMountPath(Context& ctx, const Field& f, bool target, std::string& out) {
  auto s = formats::ReadScalar(ctx, f);
  if (!s) return;
  std::string why = protocol::CheckHostPath(*s);
  if (why.empty() && target && *s == "/") why = "is the container's root";
  if (!why.empty()) {
    ctx.Error(f, "'" + formats::Quote(*s) + "' " + why +
                     " (give an absolute path like /datasets/imagenet, without . or .., "
                     "repeated or trailing /, : or ,)");
  } else {
    out = *s;
  }
}

// mounts: a list of {source, target, readOnly} or "SOURCE:TARGET[:ro|:rw]".
void ReadMounts(Context& ctx, const Field& field, std::vector<protocol::Mount>& out) {
  const std::vector<Field> items = formats::ReadList(ctx, field);
  if (items.size() > kMaxMounts) {
    ctx.Error(field, "more than " + std::to_string(kMaxMounts) + " mounts");
    return;
  }
  for (const Field& item : items) {
    protocol::Mount mount;
    if (item.node.IsScalar()) {
      const std::string text = item.node.Scalar();
      std::vector<std::string> parts;
      for (size_t at = 0;;) {
        const size_t colon = text.find(':', at);
        parts.push_back(text.substr(at, colon == std::string::npos ? colon : colon - at));
        if (colon == std::string::npos) break;
        at = colon + 1;
      }
      if (parts.size() == 3 && parts[2] != "ro" && parts[2] != "rw") parts.clear();
      if (parts.size() != 2 && parts.size() != 3) {
        ctx.Error(item, "'" + formats::Quote(text) +
                            "' is not a mount; write SOURCE:TARGET or SOURCE:TARGET:ro, or "
                            "{source, target, readOnly}");
        continue;
      }
      const std::string source_why = protocol::CheckHostPath(parts[0]);
      const std::string target_why = protocol::CheckHostPath(parts[1]);
      if (!source_why.empty() || !target_why.empty() || parts[1] == "/") {
        const std::string why = !source_why.empty()   ? "the source " + source_why
                                : !target_why.empty() ? "the target " + target_why
                                                      : "the target is the container's root";
        ctx.Error(item, "'" + formats::Quote(text) + "': " + why +
                            " (both are absolute paths, without . or .., repeated or "
                            "trailing /, : or ,)");
        continue;
      }
      mount = {.source = parts[0],
               .target = parts[1],
               .read_only = parts.size() == 3 && parts[2] == "ro"};
    } else {
      MapReader m(ctx, item);
      if (!m.is_map()) continue;
      if (auto f = m.Take("source")) {
        ReadMountPath(ctx, *f, false, mount.source);
      } else {
        ctx.Error(item, "a mount needs a source (a host directory)");
      }
      if (auto f = m.Take("target")) {
        ReadMountPath(ctx, *f, true, mount.target);
      } else {
        ctx.Error(item, "a mount needs a target (where the container sees it)");
      }
      if (auto f = m.Take("readOnly")) {
        if (auto v = formats::ReadBool(ctx, *f)) mount.read_only = *v;
      }
      m.Finish();
    }
    if (mount.source.empty() || mount.target.empty()) continue;
    for (const protocol::Mount& earlier : out) {
      if (earlier.target == mount.target) {
        ctx.Error(item, "two mounts at " + mount.target);
        break;
      }
    }
    out.push_back(std::move(mount));
  }
}

// scratch: true | false | {keep: bool}
void ReadScratch(Context& ctx, const Field& field, RunSpec& run) {
  if (field.node.IsMap()) {
    MapReader m(ctx, field);
    run.scratch = true;
    if (auto f = m.Take("keep")) {
      if (auto v = formats::ReadBool(ctx, *f)) run.keep_scratch = *v;
    }
    m.Finish();
  } else if (auto v = formats::ReadBool(ctx, field)) {
    run.scratch = *v;
  }
}

// container: {image, workdir, env, readOnlyRoot, mounts}; its env joins the job's.
void ReadContainer(Context& ctx, const Field& field, RunSpec& run) {
  MapReader c(ctx, field);
  if (!c.is_map()) return;
  ContainerSpec spec;
  if (auto f = c.Take("image")) {
    if (auto s = formats::ReadScalar(ctx, *f)) {
      // It becomes an argument of podman: nothing it could read as an option or split on.
      const bool clean = std::none_of(s->begin(), s->end(), [](char ch) {
        return static_cast<unsigned char>(ch) <= ' ' || ch == 0x7f;
      });
      if (s->empty() || s->size() > 1024 || s->front() == '-' || !clean) {
        ctx.Error(*f, "'" + formats::Quote(*s) +
                          "' is not an image reference (name[:tag], registry/name[:tag] or "
                          "oci-archive:/path.tar; no spaces, not starting with -)");
      } else {
        spec.image = *s;
      }
    }
  } else {
    ctx.Error(field, "a container needs an image");
  }
  if (auto f = c.Take("workdir")) ReadWorkdir(ctx, *f, spec.workdir);
  if (auto f = c.Take("env")) ReadEnv(ctx, *f, run.env);
  if (auto f = c.Take("readOnlyRoot")) {
    if (auto v = formats::ReadBool(ctx, *f)) spec.read_only_root = *v;
  }
  if (auto f = c.Take("mounts")) ReadMounts(ctx, *f, spec.mounts);
  c.Finish();
  if (!spec.image.empty()) run.container = std::move(spec);
}

void ReadRunFields(Context& ctx, MapReader& m, RunSpec& run, bool& has_command) {
  if (auto f = m.Take("kind")) {
    if (auto s = formats::ReadScalar(ctx, *f)) {
      if (*s == "service") {
        run.service = true;
        run.restart_policy = RestartPolicy::kAlways;
      } else if (*s != "batch") {
        ctx.Error(*f, "'" + formats::Quote(*s) + "' is not a job kind; use batch or service" +
                          formats::DidYouMean(*s, {"batch", "service"}));
      }
    }
  }
  if (auto f = m.Take("command")) {
    if (f->node.IsScalar()) {
      if (auto s = formats::ReadScalar(ctx, *f)) {
        if (s->empty()) {
          ctx.Error(*f, "the command is empty");
        } else {
          run.command = {"/bin/sh", "-c", *s};
          has_command = true;
        }
      }
    } else if (auto list = formats::ReadStringList(ctx, *f)) {
      if (list->empty() || (*list)[0].empty()) {
        ctx.Error(*f, "the command is empty; give the program and its arguments");
      } else if (list->size() > kMaxArgs) {
        ctx.Error(*f, "more than " + std::to_string(kMaxArgs) + " arguments");
      } else {
        run.command = std::move(*list);
        has_command = true;
      }
    }
  }
  if (auto f = m.Take("env")) ReadEnv(ctx, *f, run.env);
  if (auto f = m.Take("container")) ReadContainer(ctx, *f, run);
  if (auto f = m.Take("scratch")) ReadScratch(ctx, *f, run);
  // What the kernel would refuse to start is refused here, not after the job waited for GPUs.
  size_t total = 0;
  for (size_t i = 0; i < run.command.size(); ++i) {
    const size_t n = run.command[i].size();
    total += n + 1;
    if (n > kMaxArgBytes) {
      ctx.Error(m.field().mark, "command[" + std::to_string(i) + "]",
                "an argument of " + std::to_string(n) + " bytes is over the kernel's limit of " +
                    std::to_string(kMaxArgBytes) + " bytes for one argument");
    }
  }
  for (const auto& [key, value] : run.env) {
    const size_t n = key.size() + 1 + value.size();
    total += n + 1;
    if (n > kMaxArgBytes) {
      ctx.Error(m.field().mark, "env." + key,
                "the variable takes " + std::to_string(n) + " bytes, over the kernel's limit of " +
                    std::to_string(kMaxArgBytes) + " bytes for one");
    }
  }
  if (total > kMaxArgvEnvBytes) {
    ctx.Error(m.field().mark, "command",
              "the command and env take " + std::to_string(total) + " bytes, over the limit of " +
                  std::to_string(kMaxArgvEnvBytes) + " bytes that the kernel leaves for them");
  }
  if (auto f = m.Take("workdir")) ReadWorkdir(ctx, *f, run.workdir);
  if (auto f = m.Take("restartPolicy")) {
    if (auto s = formats::ReadScalar(ctx, *f)) {
      const bool always = *s == "always" || *s == "Always";
      if (run.service && !always) {
        ctx.Error(*f, "a service's replicas always restart; restartPolicy: " + formats::Quote(*s) +
                          " is for batch jobs (leave it out)");
      } else if (always && !run.service) {
        ctx.Error(*f,
                  "restartPolicy: always is for services (kind: service); a batch job restarts "
                  "with on-failure");
      } else if (*s == "never" || *s == "Never") {
        run.restart_policy = RestartPolicy::kNever;
      } else if (*s == "on-failure" || *s == "OnFailure") {
        run.restart_policy = RestartPolicy::kOnFailure;
      } else if (!always) {
        ctx.Error(*f, "'" + formats::Quote(*s) +
                          "' is not a restart policy; use never or on-failure (always: services)" +
                          formats::DidYouMean(*s, {"never", "on-failure", "always"}));
      }
    }
  }
  if (auto f = m.Take("restartLimit")) {
    if (auto v = formats::ReadInt(ctx, *f, 0, 1000)) run.restart_limit = static_cast<int>(*v);
  }
  if (auto f = m.Take("checkpointSignal")) {
    if (auto s = formats::ReadScalar(ctx, *f)) {
      if (SignalNumber(*s) == 0) {
        ctx.Error(*f, "'" + formats::Quote(*s) +
                          "' is not a checkpoint signal; use SIGTERM, SIGINT, SIGUSR1 or "
                          "SIGUSR2");
      } else {
        run.checkpoint_signal = *s;
      }
    }
  }
}

// What a service may not say, read from the job as parsed: its replicas are independent (one
// group of a fixed count, no gang, no topology across them) and it runs until cancelled.
void CheckService(Context& ctx, const Field& doc, const core::Job& job) {
  auto at = [&](const char* key) {
    const YAML::Node n = doc.node[key];
    return n ? n.Mark() : doc.mark;
  };
  if (job.groups.size() != 1) {
    ctx.Error(at("tasks"), "tasks",
              "a service has one kind of replica; give its fields at the top level (or one "
              "entry under tasks), and run other roles as their own services");
    return;
  }
  const core::TaskGroup& g = job.groups.front();
  const std::string where = doc.node["tasks"] ? "tasks[0].replicas" : "replicas";
  if (g.min_replicas != g.replicas) {
    ctx.Error(at("replicas"), where,
              "a service keeps a fixed number of replicas; give a count such as 3 and change it "
              "with `gangway scale`");
  }
  if (job.time_limit) {
    ctx.Error(at("timeLimit"), "timeLimit",
              "a service runs until it is cancelled or scaled to 0; timeLimit is for batch jobs");
  }
}

}  // namespace

std::string_view RestartPolicyName(RestartPolicy p) {
  switch (p) {
    case RestartPolicy::kOnFailure:
      return "on-failure";
    case RestartPolicy::kAlways:
      return "always";
    case RestartPolicy::kNever:
      break;
  }
  return "never";
}

int SignalNumber(std::string_view name) {
  if (name == "SIGTERM") return SIGTERM;
  if (name == "SIGINT") return SIGINT;
  if (name == "SIGUSR1") return SIGUSR1;
  if (name == "SIGUSR2") return SIGUSR2;
  return 0;
}

formats::ParseResult<LiveJob> ParseLiveJob(std::string_view text, const LiveJobOptions& options) {
  Context ctx{"request"};
  auto doc = formats::LoadDocument(ctx, text);
  if (!doc) return ctx.TakeErrors();
  if (!doc->node.IsMap()) {
    ctx.Error(*doc, "expected one job: a mapping with name:, command: and resources, got " +
                        std::string(formats::DescribeKind(doc->node)));
    return ctx.TakeErrors();
  }
  if (const YAML::Node& map = doc->node; map["jobs"] && map["jobs"].IsSequence()) {
    ctx.Error(doc->mark, "jobs",
              "this is a list of jobs; a request carries one job (a mapping with name:, "
              "command: and resources): submit each on its own");
    return ctx.TakeErrors();
  }
  LiveJob out;
  bool has_command = false;
  static const std::map<std::string, int32_t> kNoClasses;
  formats::JobReadOptions read{
      .now = options.now,
      .priority_classes = options.priority_classes ? options.priority_classes : &kNoClasses,
      .extra_job_fields = [&](MapReader& m) { ReadRunFields(ctx, m, out.run, has_command); },
  };
  auto job = formats::ReadJob(ctx, *doc, read);
  if (job && !has_command && !ctx.failed()) {
    ctx.Error(*doc, "the job has no command; add command: [program, args...]");
  }
  if (job && out.run.service && !ctx.failed()) CheckService(ctx, *doc, *job);
  if (!job || ctx.failed()) return ctx.TakeErrors();
  out.job = std::move(*job);
  return out;
}

int ReplicaBackoffSeconds(int restarts) {
  return restarts <= 1 ? 1 : std::min(300, 1 << std::min(restarts - 1, 9));
}

void MakeReplica(LiveJob& job, int replica) {
  core::TaskGroup& group = job.job.groups.front();
  group.replicas = 1;
  group.min_replicas = 1;
  job.job.yields_only_to_priority = true;
  job.job.name += "-" + std::to_string(replica);
}

}  // namespace gangway::controller
