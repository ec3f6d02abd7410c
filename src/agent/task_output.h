#ifndef GANGWAY_AGENT_TASK_OUTPUT_H_
#define GANGWAY_AGENT_TASK_OUTPUT_H_

// A task's output file on the agent, as the agent ships it to the controller: its size, a
// chunk of it, the prefix the controller already has given back to the filesystem, and a
// chunk made safe for JSON. Free functions over files; no state, any thread.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace gangway::agent {

// The file's size, 0 if it cannot be read.
uint64_t FileSize(const std::filesystem::path& path);
// Gives the blocks of [0, end) back to the filesystem; the file keeps its size and the task its
// write offset, and later reads start past `end`. Where the filesystem cannot punch holes the
// file just keeps its blocks until the task is forgotten.
void FreeLogPrefix(const std::filesystem::path& path, uint64_t end);
// At most `max` bytes from `offset` (fewer at the end of the file; none if it cannot be read).
std::string ReadAt(const std::filesystem::path& path, uint64_t offset, size_t max);
// A log chunk made safe for a JSON string: every byte that is not part of valid UTF-8 becomes
// '?' (one byte for one, so offsets still count the log's bytes); a UTF-8 sequence cut off at
// the end is left out for the next chunk, unless `final` (then its bytes become '?').
std::string LogChunkText(std::string data, bool final);

}  // namespace gangway::agent

#endif  // GANGWAY_AGENT_TASK_OUTPUT_H_
