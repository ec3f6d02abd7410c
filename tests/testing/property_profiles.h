#ifndef GANGWAY_TESTS_TESTING_PROPERTY_PROFILES_H_
#define GANGWAY_TESTS_TESTING_PROPERTY_PROFILES_H_

// The scheduling profiles the property tests run: built from whatever the plugin registry holds
// at run time, so that a newly registered queue order, scorer, placer, backfill, admission or
// preemption policy is covered without touching the tests.

#include <ostream>
#include <string>
#include <vector>

#include "core/sched/profile.h"

namespace gangway::testing {

struct ProfileCase {
  int index = 0;
  std::string name;  // unique, a valid GoogleTest parameter name
  core::Profile profile;
};

inline void PrintTo(const ProfileCase& c, std::ostream* os) { *os << c.name; }

// A sweep that pairs each queue order with every gang placer and several scorers, backfill and
// preemption settings, minimum runtimes and cycle budgets, then one extra case for any
// registered plugin the sweep did not reach. Deterministic for a given registry.
std::vector<ProfileCase> PropertyProfiles();

}  // namespace gangway::testing

#endif  // GANGWAY_TESTS_TESTING_PROPERTY_PROFILES_H_
