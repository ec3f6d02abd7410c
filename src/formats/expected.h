#ifndef GANGWAY_FORMATS_EXPECTED_H_
#define GANGWAY_FORMATS_EXPECTED_H_

// A value, or the reason a single value could not be parsed ("1.5 GPUs is neither whole nor
// a fraction below 1"). The reason is a phrase without position; the YAML readers add the
// file, line, column and field path. One of the project's uses of core::Result.

#include <string>
#include <utility>

#include "core/model/result.h"

namespace gangway::formats {

template <typename T>
using Expected = core::Result<T, std::string>;

// The failure of an Expected; always through here, so that Expected<std::string> can tell a
// reason from a value.
inline core::Failure<std::string> Fail(std::string reason) { return {std::move(reason)}; }

}  // namespace gangway::formats

#endif  // GANGWAY_FORMATS_EXPECTED_H_
