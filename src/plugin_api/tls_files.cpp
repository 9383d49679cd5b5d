#include "plugin_api/tls_files.hpp"

#include <memory>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "plugin_api/flag_files.hpp"

namespace fracpack::api {
namespace {

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using Certificate = std::unique_ptr<X509, decltype(&X509_free)>;
using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

/// OpenSSL's reason for the last failure ("no start line"), and its error queue emptied.
std::string openssl_reason() {
  const unsigned long error = ERR_peek_last_error();
  const char* reason = error == 0 ? nullptr : ERR_reason_error_string(error);
  ERR_clear_error();
  return reason == nullptr ? "unknown reason" : reason;
}

/// `text` as a memory BIO (it must outlive the BIO).
Bio memory_bio(const std::string& text) { return {BIO_new_mem_buf(text.data(), static_cast<int>(text.size())), &BIO_free}; }

/// The first certificate in the PEM file at `path`; `what` names the file in errors.
Result<Certificate> read_certificate(const std::string& path, const char* what) {
  auto text = read_flag_file(path, what);
  if (!text) return text.status();
  Bio bio = memory_bio(*text);
  Certificate cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), &X509_free);
  if (!cert) return invalid_argument("{} {}: holds no PEM certificate ({})", what, path, openssl_reason());
  return cert;
}

/// The private key in the PEM file at `path`; `what` names the file in errors.
Result<Key> read_key(const std::string& path, const char* what) {
  auto text = read_flag_file(path, what);
  if (!text) return text.status();
  Bio bio = memory_bio(*text);
  // No passphrase callback: an encrypted key fails here instead of prompting on the terminal.
  Key key(PEM_read_bio_PrivateKey(bio.get(), nullptr, [](char*, int, int, void*) { return 0; }, nullptr), &EVP_PKEY_free);
  if (!key) {
    return invalid_argument("{} {}: holds no PEM private key, or an encrypted one ({})", what, path, openssl_reason());
  }
  return key;
}

}  // namespace

Status check_tls_files(const TlsFiles& tls, const TlsFlags& flags) {
  if (tls.cert.empty() && tls.key.empty() && tls.client_ca.empty()) return Status::ok();
  if (tls.cert.empty() || tls.key.empty()) {
    return invalid_argument("TLS needs both a certificate and its key ({} and {}; mutual TLS adds {})", flags.cert, flags.key,
                            flags.client_ca);
  }
  auto cert = read_certificate(tls.cert, flags.cert);
  if (!cert) return cert.status();
  auto key = read_key(tls.key, flags.key);
  if (!key) return key.status();
  if (X509_check_private_key(cert->get(), key->get()) != 1) {
    ERR_clear_error();
    return invalid_argument("{} {} does not match the certificate in {} {}: the key is not that certificate's private key "
                            "(give the key the certificate was issued for)",
                            flags.key, tls.key, flags.cert, tls.cert);
  }
  if (!tls.client_ca.empty()) {
    auto ca = read_certificate(tls.client_ca, flags.client_ca);
    if (!ca) return ca.status();
  }
  return Status::ok();
}

}  // namespace fracpack::api
