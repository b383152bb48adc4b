#include "support/self_signed.h"

#include <utility>

#include <openssl/pem.h>
#include <openssl/x509v3.h>

namespace lemon::testing {

SelfSigned::SelfSigned() {
  key = EVP_EC_gen("P-256");
  cert = X509_new();
  if (key == nullptr || cert == nullptr) {
    return;
  }
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair{NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"},
                            std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    if (ext == nullptr) {
      return;
    }
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  ok = X509_sign(cert, key, EVP_sha256()) > 0;
}

SelfSigned::~SelfSigned() {
  X509_free(cert);
  EVP_PKEY_free(key);
}

bool SelfSigned::write_pem(const std::string& path) const {
  BIO* out = BIO_new_file(path.c_str(), "w");
  if (out == nullptr) {
    return false;
  }
  const bool written = PEM_write_bio_X509(out, cert) == 1;
  BIO_free(out);
  return written;
}

}  // namespace lemon::testing
