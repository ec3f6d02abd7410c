#ifndef GANGWAY_CONTROLLER_TLS_H_
#define GANGWAY_CONTROLLER_TLS_H_

// Facts about the controller's TLS certificate that decide what its clients must be told.

#include <optional>
#include <string>

namespace gangway::controller {

// Whether the first certificate in the PEM file `path` is self-signed (its own issuer, and
// its signature verifies with its own key): clients can then trust it by naming the file as
// their CA. nullopt if the file holds no readable certificate.
std::optional<bool> IsSelfSignedCertificate(const std::string& path);

}  // namespace gangway::controller

#endif  // GANGWAY_CONTROLLER_TLS_H_
