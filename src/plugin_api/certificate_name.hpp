// The caller's name in a verified client certificate: its subject's common name (CN), the way
// kube-apiserver's x509 authenticator names a user. A subject with no CN, or with several (which
// readers disagree on: OpenSSL's first, Go's last), names nobody. Both fronts use this.
#pragma once

#include <string>
#include <string_view>

#include <openssl/x509.h>

namespace fracpack::api {

/// The one CN of `cert`'s subject, "" when it has none or more than one (or `cert` is null).
std::string certificate_name(X509* cert);

/// The same for a PEM-encoded certificate (gRPC hands the peer's over as PEM); "" when it does
/// not parse.
std::string certificate_name_of_pem(std::string_view pem);

}  // namespace fracpack::api
