// The OpenAPI 3 description of /v1 (docs/design/live-system.md is the prose version).

#include <nlohmann/json.hpp>

#include "controller/http_api.h"

namespace gangway::controller {
namespace {

using nlohmann::json;

json Op(const char* summary, const char* tag, json params = json::array(), bool body = false,
        const char* ok = "200", const char* schema = "") {
  json op = {
      {"summary", summary},
      {"tags", {tag}},
      {"parameters", std::move(params)},
      {"responses",
       {{ok,
         {{"description", "success"},
          {"content",
           {{"application/json",
             {{"schema", std::string(schema).empty()
                             ? json{{"type", "object"}}
                             : json{{"$ref", std::string("#/components/schemas/") + schema}}}}}}}}},
        {"4XX",
         {{"description", "bad input, missing token, forbidden or unknown object"},
          {"content",
           {{"application/json", {{"schema", {{"$ref", "#/components/schemas/Error"}}}}}}}}}}}};
  if (body) {
    op["requestBody"] = {
        {"required", true},
        {"content",
         {{"application/yaml", {{"schema", {{"type", "string"}}}}},
          {"application/json", {{"schema", {{"$ref", "#/components/schemas/JobSpec"}}}}}}}};
  }
  return op;
}

json Param(const char* name, const char* in, const char* type, const char* description) {
  return {{"name", name},
          {"in", in},
          {"required", std::string(in) == "path"},
          {"description", description},
          {"schema", {{"type", type}}}};
}

json Build() {
  const json id = Param("id", "path", "integer", "job id");
  const json node = Param("name", "path", "string", "node name");
  json paths = {
      {"/healthz", {{"get", Op("Liveness", "system")}}},
      {"/metrics", {{"get", Op("Prometheus metrics (text format)", "system")}}},
      {"/v1/whoami", {{"get", Op("The caller's user and role", "users")}}},
      {"/v1/jobs",
       {{"post", Op("Submit one job (YAML or JSON, docs/job-spec.md plus command, env, "
                    "workdir, restartPolicy, restartLimit, checkpointSignal)",
                    "jobs", json::array(), true, "201", "JobEnvelope")},
        {"get",
         Op("List jobs, newest first", "jobs",
            {Param("state", "query", "string", "comma-separated states"),
             Param("user", "query", "string", "only this user's jobs"),
             Param("queue", "query", "string", "only this queue"),
             Param("name", "query", "string", "only jobs of this name"),
             Param("limit", "query", "integer", "page size, 1..10000 (default 1000)"),
             Param("before", "query", "integer", "only ids below this: the previous page's `next`"),
             Param("all", "query", "boolean", "every user's jobs the caller may see")})}}},
      {"/v1/jobs/{id}",
       {{"get", Op("A job with its tasks and events", "jobs", {id}, false, "200", "JobEnvelope")}}},
      {"/v1/jobs/{id}/cancel",
       {{"post", Op("Cancel a job; running tasks get their checkpoint grace", "jobs", {id}, false,
                    "200", "JobEnvelope")}}},
      {"/v1/jobs/{id}/scale",
       {{"post", Op("Set how many replicas a service keeps running: body {\"replicas\": N}", "jobs",
                    {id}, false, "200", "JobEnvelope")}}},
      {"/v1/jobs/{id}/restart",
       {{"post", Op("Rolling restart of a service: one replica at a time, each once the others "
                    "run",
                    "jobs", {id}, false, "200", "JobEnvelope")}}},
      {"/v1/jobs/{id}/logs",
       {{"get", Op("A task's output from an offset (text/plain); headers X-Gangway-Next-Offset, "
                   "X-Gangway-Log-Complete and X-Gangway-Log-Size (the bytes held now)",
                   "jobs",
                   {id, Param("task", "query", "integer", "task index (RANK)"),
                    Param("offset", "query", "integer", "byte offset"),
                    Param("limit", "query", "integer", "at most this many bytes")})}}},
      {"/v1/nodes",
       {{"get",
         Op("Nodes in name order, their GPUs and who holds them; a page ends with \"next\" when "
            "more follow",
            "nodes",
            {Param("view", "query", "string",
                   "full (default: every GPU and its holders), summary (GPU counts by model; "
                   "unhealthy and MIG GPUs' indices) or map (the node's models, and per GPU [model "
                   "index, flags, utilization, holders], a holder [job, user] for a whole GPU, "
                   "else [job, user, milli, migProfile]: what the dashboard's GPU map draws)"),
             Param("state", "query", "string",
                   "only nodes in these states, comma-separated (ready, cordoned, draining, "
                   "drained, lost)"),
             Param("after", "query", "string", "only nodes named after this (a page's next)"),
             Param("limit", "query", "integer", "at most this many (default: all)")})}}},
      {"/v1/nodes/{name}", {{"get", Op("One node", "nodes", {node})}}},
      {"/v1/nodes/{name}/drain",
       {{"post", Op("No new work; drained once idle (admin)", "nodes", {node})}}},
      {"/v1/nodes/{name}/undrain", {{"post", Op("Take new work again (admin)", "nodes", {node})}}},
      {"/v1/nodes/{name}/cordon", {{"post", Op("No new work (admin)", "nodes", {node})}}},
      {"/v1/nodes/{name}/uncordon", {{"post", Op("Undo cordon (admin)", "nodes", {node})}}},
      {"/v1/utilization",
       {{"get", Op("GPUs allocated and their measured utilization, per node and per job (most "
                   "idle GPUs first); names and queues of the caller's jobs only",
                   "nodes",
                   {Param("jobs", "query", "integer",
                          "the most idle this many jobs (0, the default: all)"),
                    Param("job", "query", "integer", "only this job's row"),
                    Param("nodes", "query", "string",
                          "all (default) or none: leave out the per-node rows")})}}},
      {"/v1/queues", {{"get", Op("Queues with quota, usage and fair share", "queues")}}},
      {"/v1/queues/{name}/jobs",
       {{"get", Op("The queue's waiting jobs in the order the scheduler considers them, each with "
                   "its position, the GPUs of the jobs ahead, its reason and estimated start "
                   "(names and messages of the caller's jobs only)",
                   "queues", {Param("name", "path", "string", "queue name")})}}},
      {"/v1/history",
       {{"get", Op("The controller's samples of the cluster: GPUs allocated and used, pending and "
                   "running jobs, wait percentiles, GPU-hours per queue",
                   "history",
                   {Param("seconds", "query", "integer", "how far back (default 86400)"),
                    Param("points", "query", "integer", "at most this many samples (default 500)"),
                    Param("format", "query", "string", "json (default) or csv")})}}},
      {"/v1/report",
       {{"get", Op("GPU-hours allocated and used, energy and cost of the jobs the caller may see "
                   "(an admin: all), over a window, by queue, user, pool or job",
                   "history",
                   {Param("by", "query", "string", "queue (default), user, pool or job"),
                    Param("since", "query", "string",
                          "a span back from until (7d, the default) or a time (RFC 3339)"),
                    Param("until", "query", "string", "a time (RFC 3339); default now"),
                    Param("format", "query", "string", "json (default) or csv")})}}},
      {"/v1/estimates",
       {{"get", Op("How close estimated starts came to actual starts, over the last day and week",
                   "history")}}},
      {"/v1/whatif",
       {{"post", Op("What would let a pending job start now or sooner: fewer GPUs per task, fewer "
                    "replicas, a looser topology requirement, a shorter time limit, another queue, "
                    "each tried by the scheduler on a copy of the cluster (body {\"job\": ID}; "
                    "read-only, rate-limited per user)",
                    "jobs")}}},
      {"/v1/events",
       {{"get", Op("Events after a sequence number, oldest first; `next` is the sequence number "
                   "to read on from",
                   "events",
                   {Param("after", "query", "integer", "sequence number"),
                    Param("limit", "query", "integer", "at most this many, the oldest"),
                    Param("last", "query", "integer", "the newest this many instead"),
                    Param("job", "query", "integer", "only this job's"),
                    Param("waitMs", "query", "integer",
                          "with none to show yet, wait up to this long for one (0..30000)")})}}},
      {"/v1/logs/changes",
       {{"get", Op("Appends to the tasks' output files after a version of this controller's "
                   "feed, for standbys copying them (admin)",
                   "logs",
                   {Param("after", "query", "integer", "the feed version copied up to"),
                    Param("limit", "query", "integer", "at most this many (default 10000)")})}}},
      {"/v1/logs/files",
       {{"get", Op("The output files of the jobs held, by job id, a page at a time (admin)", "logs",
                   {Param("after", "query", "integer", "only jobs after this id"),
                    Param("limit", "query", "integer", "at most this many jobs")})}}},
      {"/v1/logs/{job}/{task}",
       {{"get",
         Op("Bytes of one task attempt's output file, with X-Gangway-Log-Size (admin)", "logs",
            {Param("job", "path", "integer", "job id"),
             Param("task", "path", "string", "task id: job.attempt.index"),
             Param("offset", "query", "integer", "first byte"),
             Param("limit", "query", "integer", "at most this many bytes")})}}},
      {"/v1/agents/register",
       {{"post",
         Op("An agent registers its node (join token: the answer carries the node's token; or the "
            "node's own token)",
            "agents")}}},
      {"/v1/agents/{name}/commands",
       {{"get", Op("Long poll for launch and stop commands (the node's token)", "agents",
                   {node, Param("epoch", "query", "string", "controller epoch last seen"),
                    Param("after", "query", "integer", "last applied command"),
                    Param("waitMs", "query", "integer", "how long to wait")})}}},
      {"/v1/agents/{name}/report",
       {{"post", Op("Task states, exits, output and GPU health; the heartbeat (the node's token)",
                    "agents", {node})}}},
  };
  json schemas = {
      {"Error",
       {{"type", "object"},
        {"properties",
         {{"error",
           {{"type", "object"},
            {"required", {"code", "message"}},
            {"properties",
             {{"code", {{"type", "string"}}},
              {"message", {{"type", "string"}}},
              {"field", {{"type", "string"}}},
              {"details", {{"type", "array"}, {"items", {{"type", "object"}}}}}}}}}}}}},
      {"JobSpec",
       {{"type", "object"},
        {"required", {"name", "command"}},
        {"properties",
         {{"name", {{"type", "string"}}},
          {"queue", {{"type", "string"}}},
          {"command",
           {{"oneOf",
             {{{"type", "string"}}, {{"type", "array"}, {"items", {{"type", "string"}}}}}}}},
          {"gpu", {{"oneOf", {{{"type", "number"}}, {{"type", "string"}}}}}},
          {"replicas", {{"type", "integer"}}},
          {"env", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}},
          {"kind", {{"type", "string"}, {"enum", {"batch", "service"}}}},
          {"restartPolicy", {{"type", "string"}, {"enum", {"never", "on-failure", "always"}}}},
          {"restartLimit", {{"type", "integer"}}},
          {"checkpointSignal", {{"type", "string"}}}}}}},
      {"Job",
       {{"type", "object"},
        {"properties",
         {{"id", {{"type", "integer"}}},
          {"name", {{"type", "string"}}},
          {"user", {{"type", "string"}}},
          {"queue", {{"type", "string"}}},
          {"state",
           {{"type", "string"},
            {"enum",
             {"pending", "scheduled", "running", "succeeded", "failed", "preempted", "cancelled",
              "timeout"}}}},
          {"pending", {{"type", "object"}, {"nullable", true}}},
          {"taskList", {{"type", "array"}, {"items", {{"type", "object"}}}}},
          {"events", {{"type", "array"}, {"items", {{"type", "object"}}}}}}}}},
      {"JobEnvelope",
       {{"type", "object"}, {"properties", {{"job", {{"$ref", "#/components/schemas/Job"}}}}}}},
  };
  return {{"openapi", "3.0.3"},
          {"info", {{"title", "Gangway"}, {"version", "1"}}},
          {"components",
           {{"schemas", schemas},
            {"securitySchemes", {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}}}}}},
          {"security", {{{"bearer", json::array()}}}},
          {"paths", paths}};
}

}  // namespace

const std::string& OpenApiDocument() {
  static const std::string doc = Build().dump(2);
  return doc;
}

}  // namespace gangway::controller
