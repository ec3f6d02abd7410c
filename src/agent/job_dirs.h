#ifndef GANGWAY_AGENT_JOB_DIRS_H_
#define GANGWAY_AGENT_JOB_DIRS_H_

// A job's directories on a node: its checkpoint directory and its scratch directory
// (docs/job-spec.md, "scratch"): <root>/<job id>, shared by the job's tasks on the node and
// removed by the agent when the last of them exits (unless the job keeps it). Both are the
// job's user's with mode 0700.
//
// The agent runs as root and the directory's contents are the user's: RemoveTree never
// follows a link and works on directory descriptors, so that a task which swaps a directory
// for a link to /etc while it is being removed cannot make the agent remove anything outside.
// Free functions; any thread.

#include <filesystem>
#include <optional>
#include <string>

#include "agent/task_runner.h"

namespace gangway::agent {

// Makes the directory `who`'s, readable by them alone (0700). Opened without following a
// link: a user who owned it in an earlier attempt may have put one there. "" on success.
std::string GiveDirectory(const std::filesystem::path& dir, const Credentials& who);

// Creates <root>/<job> (the root with mode 0755 if missing), the job's directory with mode
// 0700 and, with `owner`, given to that user. "" on success, else why not.
std::string MakeScratchDir(const std::filesystem::path& dir,
                           const std::optional<Credentials>& owner);

// Marks <root>/<job>'s directory as kept past the job (a file of the agent's, beside it),
// so that RemoveLeftScratchDirs leaves it.
void MarkScratchKept(const std::filesystem::path& dir);

// Removes what an agent that died left under `root`: job directories not marked kept, and
// those it had set aside for removal. Names that are not a job's are left alone.
void RemoveLeftScratchDirs(const std::filesystem::path& root);

// Removes `path` and all under it without following links. "" on success (or when it does
// not exist), else the first error met; what could be removed is removed.
std::string RemoveTree(const std::filesystem::path& path);

// Writes the unix time `grace_seconds` from now into `checkpoint_dir`'s
// protocol::kPreemptDeadlineFile, replacing it whole (a new file renamed over the name, so a
// link a task left there is replaced, never followed). Returns "" or why it could not.
std::string WritePreemptDeadline(const std::filesystem::path& checkpoint_dir,
                                 int64_t grace_seconds);

}  // namespace gangway::agent

#endif  // GANGWAY_AGENT_JOB_DIRS_H_
