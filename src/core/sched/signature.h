#ifndef GANGWAY_CORE_SCHED_SIGNATURE_H_
#define GANGWAY_CORE_SCHED_SIGNATURE_H_

// Keys under which one cycle shares what it learnt about a job with the jobs that look the
// same to it. Within a cycle free capacity only shrinks, so jobs with equal requests,
// topology and reservation eligibility fit or fail alike: the cycle places, checks
// feasibility and searches for victims once per key instead of once per job.
//
// Invariant: jobs with equal keys get equal outcomes, so a key holds every field of the job
// that the phase keyed by it reads; each field is written in full and followed by a separator.
// Keys are appended to buffers the caller clears and reuses: a cycle computes several per
// pending job, and with a backlog of thousands their allocations were a good part of its time.

#include <cstdint>
#include <string>

#include "core/model/job.h"

namespace gangway::core {

// `v` in decimal, then ','.
void AppendInt(std::string& key, int64_t v);

// Every task group's shape (replicas, per-node limit, GPU, CPU, memory and extras request,
// node selector, pool, spot policy), the topology constraint and preference, and whether the
// job may use
// capacity held by backfill reservations.
void AppendSignature(std::string& key, const Job& job, bool may_use_reserved);
// AppendSignature less its last field, whether the job may use reserved capacity: callers
// that need the signature both ways build this once and append AppendInt(0 or 1).
void AppendSignatureShape(std::string& key, const Job& job);

// AppendSignature of Job{.groups = {group}} that may use reserved capacity, without copying
// the group into a job.
void AppendGroupSignature(std::string& key, const TaskGroup& group);

}  // namespace gangway::core

#endif  // GANGWAY_CORE_SCHED_SIGNATURE_H_
