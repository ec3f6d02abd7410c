#include "controller/tls.h"

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <memory>

namespace gangway::controller {

std::optional<bool> IsSelfSignedCertificate(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "r"), &std::fclose);
  if (!file) return std::nullopt;
  std::unique_ptr<X509, void (*)(X509*)> cert(PEM_read_X509(file.get(), nullptr, nullptr, nullptr),
                                              &X509_free);
  if (!cert) return std::nullopt;
  // X509_check_issued compares names and key identifiers; the signature check confirms it.
  if (X509_check_issued(cert.get(), cert.get()) != X509_V_OK) return false;
  EVP_PKEY* key = X509_get0_pubkey(cert.get());
  return key != nullptr && X509_verify(cert.get(), key) == 1;
}

}  // namespace gangway::controller
