// Backfill policies. The planning itself (earliest start from running jobs' time limits, and
// keeping later jobs off reserved capacity unless they end before it is needed) is shared and
// lives in the cycle; a policy says how many blocked jobs get a reservation.
//   none          strict order, no backfill: the first job blocked for resources stops every
//                 job behind it in this cycle (Slurm's sched/builtin, Kueue's StrictFIFO)
//   greedy        no reservations: anything that fits starts, so a big job can be overtaken
//                 by smaller ones indefinitely (Kueue's BestEffortFIFO)
//   easy          EASY (aggressive) backfill: only the first blocked job gets a reservation;
//                 later jobs start if they do not delay it
//   conservative  every blocked job, in order, up to `depth`, gets one

#include "core/plugins/builtin.h"
#include "core/sched/registry.h"

namespace gangway::core {
namespace {

class FixedBackfill final : public BackfillPolicy {
 public:
  FixedBackfill(std::string_view name, int reservations, bool strict = false)
      : name_(name), n_(reservations), strict_(strict) {}
  std::string_view name() const override { return name_; }
  int MaxReservations() const override { return n_; }
  bool StrictOrder() const override { return strict_; }

 private:
  std::string_view name_;
  int n_;
  bool strict_;
};

}  // namespace

void RegisterBackfillPlugins(Registry& registry) {
  registry.AddBackfill(
      "none", "strict order: the first blocked job blocks all behind it",
      [](PluginArgs&) { return std::make_unique<FixedBackfill>("none", 0, true); });
  registry.AddBackfill("greedy", "no reservations: whatever fits starts, in order",
                       [](PluginArgs&) { return std::make_unique<FixedBackfill>("greedy", 0); });
  registry.AddBackfill("easy", "EASY: reserve for the first blocked job, backfill the rest",
                       [](PluginArgs&) { return std::make_unique<FixedBackfill>("easy", 1); });
  registry.AddBackfill(
      "conservative", "reserve for every blocked job in order, up to depth (default 64)",
      [](PluginArgs& args) -> std::unique_ptr<BackfillPolicy> {
        int64_t depth = args.Int("depth", 64);
        if (depth < 1 || depth > 100000) args.Reject("depth", "must be between 1 and 100000");
        return std::make_unique<FixedBackfill>("conservative", static_cast<int>(depth));
      });
}

}  // namespace gangway::core
