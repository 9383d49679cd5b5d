// A server's TLS files, checked before a front starts: a key that is not the certificate's, a file
// that holds no certificate or no key, or one that cannot be read is said as such, naming the
// files, instead of surfacing as a listener that "cannot bind". For every front that serves TLS.
#pragma once

#include <string>

#include "fracpack/core/status.hpp"

namespace fracpack::api {

/// A server's TLS material, by path.
struct TlsFiles {
  std::string cert;       ///< PEM certificate chain path ("" = plaintext)
  std::string key;        ///< PEM private key path
  std::string client_ca;  ///< PEM CA bundle path; set = mutual TLS (client certificates required)
  /// With client_ca: a client certificate is verified when shown but not required (callers may
  /// authenticate with a bearer token instead: serve --token-file).
  bool client_certificate_optional = false;
};

/// The flags that name each file, for messages (a front with flags of its own passes them).
struct TlsFlags {
  const char* cert = "--tls-cert";
  const char* key = "--tls-key";
  const char* client_ca = "--tls-client-ca";
};

/// OK for plaintext (no file set) and for a readable certificate chain with its own private key
/// (and, when set, a client CA file with at least one certificate). Else kInvalidArgument naming
/// the flag and file: one of cert and key without the other; a file that cannot be read; one with
/// no PEM certificate (cert, client_ca) or no unencrypted PEM private key (key); a key that does
/// not match the certificate (OpenSSL's X509_check_private_key), naming both files.
Status check_tls_files(const TlsFiles& tls, const TlsFlags& flags = {});

}  // namespace fracpack::api
