#include "core/sched/plugin.h"

#include "core/sched/signature.h"

namespace gangway::core {

uint64_t Rng::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Rng::Below(uint64_t n) {
  // Rejection sampling: unbiased for any n.
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = Next();
  } while (x >= limit);
  return x % n;
}

void JobCursor::TakeRest(std::vector<const Job*>& out) {
  while (const Job* job = Next()) out.push_back(job);
}

bool QueueOrder::Precedes(const CycleContext& /*ctx*/, const Job& a, const Job& b) const {
  return a.priority > b.priority;
}

void QueueOrder::AppendPrecedenceKey(std::string& key, const Job& job) const {
  AppendInt(key, job.priority);
}

Instant QueueOrder::NextChange(const Snapshot& /*snapshot*/, Duration /*resolution*/) const {
  return kNever;
}

void Preemption::AppendPreemptorKey(std::string& key, const QueueOrder& /*order*/,
                                    const Job& preemptor) const {
  key += 'j';
  AppendInt(key, static_cast<int64_t>(preemptor.id.value));
}

}  // namespace gangway::core
