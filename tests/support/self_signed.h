// A self-signed certificate for 127.0.0.1 and localhost, made at test time
// with OpenSSL (never a committed file), for TLS test servers (cpp-httplib's
// SSLServer takes `cert` and `key`) and the clients that must trust or
// refuse it.
#pragma once

#include <string>

#include <openssl/evp.h>
#include <openssl/x509.h>

namespace lemon::testing {

struct SelfSigned {
  SelfSigned();
  ~SelfSigned();
  SelfSigned(const SelfSigned&) = delete;
  SelfSigned& operator=(const SelfSigned&) = delete;

  // The certificate as PEM, in `path`.
  bool write_pem(const std::string& path) const;

  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  bool ok = false;
};

}  // namespace lemon::testing
