#include "formats/job_file.h"

#include "formats/job_reader.h"
#include "formats/yaml_reader.h"

namespace gangway::formats {

ParseResult<JobFile> ParseJobFile(std::string_view text, std::string_view file_name,
                                  const JobFileOptions& options) {
  Context ctx{std::string(file_name)};
  auto doc = LoadDocument(ctx, text);
  if (!doc) return ctx.TakeErrors();

  std::vector<Field> entries;
  if (doc->node.IsNull()) {
    ctx.Error(doc->mark, "", "the file is empty; expected jobs: followed by a list of jobs");
    return ctx.TakeErrors();
  }
  const YAML::Node& root = doc->node;
  if (root.IsMap() && root["name"]) {
    entries.push_back(*doc);  // a single job
  } else {
    MapReader top(ctx, *doc);
    if (!top.is_map()) return ctx.TakeErrors();
    if (auto jobs = top.Take("jobs")) {
      if (!jobs->node.IsNull()) entries = ReadList(ctx, *jobs);
    } else {
      ctx.Error(doc->mark, "", "expected jobs: followed by a list of jobs");
    }
    top.Finish();
  }

  JobReadOptions read{.now = options.now, .priority_classes = &options.priority_classes};
  JobFile out;
  std::map<std::string, int, std::less<>> seen;  // name -> line
  for (const Field& entry : entries) {
    auto job = ReadJob(ctx, entry, read);
    if (!job) continue;
    Field name_field = entry;
    const YAML::Node& node = entry.node;
    if (node.IsMap() && node["name"]) {
      name_field.mark = node["name"].Mark();
      name_field.path = ChildPath(entry.path, "name");
    }
    if (options.taken_names.contains(job->name)) {
      ctx.Error(name_field, "job name '" + job->name + "' is already used by a running job");
      continue;
    }
    auto [it, inserted] = seen.emplace(job->name, name_field.mark.line + 1);
    if (!inserted) {
      ctx.Error(name_field, "duplicate job name '" + job->name + "'; it is already used on line " +
                                std::to_string(it->second));
      continue;
    }
    job->id = core::JobId{options.first_id + out.jobs.size()};
    out.jobs.push_back(std::move(*job));
  }
  if (ctx.failed()) return ctx.TakeErrors();
  return out;
}

}  // namespace gangway::formats
