// Who may call what, for both fronts (docs/security.md).
//
// A caller is named by the subject common name of its client certificate (mutual TLS: the fronts
// only see certificates the --tls-client-ca signed) or by the user of its bearer token
// (`Authorization: Bearer <token>`, looked up in a token file in kube-apiserver's static token
// file format, `token,user[,uid[,groups]]` per line). A certificate name comes first when both are
// given. kube-scheduler's extender client cannot send a token: it authenticates with its
// tlsConfig's client certificate.
//
// Permissions:
// - kSchedule: the extender verbs (Filter, Prioritize, Bind, Preempt, on both fronts). Callers
//   --allow-scheduler names; when it names none, every authenticated caller.
// - kRead: Explain, Snapshot, /debug/verify: schedulers and administrators.
// - kAdminister: the Cluster RPCs that change the ledger (Apply, Remove, Release, Sync): only the
//   callers --allow-admin names. (Following an API server, the core refuses them for everyone.)
// Probes (/healthz, /readyz, /metrics on the --health listener, gRPC health) need nothing.
//
// With neither client certificates nor a token file, authentication is off and every caller may
// do everything: fit for a sidecar on loopback only (serve refuses other addresses unless told
// --allow-unauthenticated).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fracpack/core/status.hpp"

namespace fracpack::api {

enum class Permission { kSchedule, kRead, kAdminister };

/// "schedule", "read", "administer".
std::string_view permission_name(Permission p);

struct AccessOptions {
  std::string token_file;           ///< "" = no bearer tokens
  bool client_certificates = false; ///< a client CA is configured: certificate names are verified
  std::vector<std::string> schedulers;  ///< --allow-scheduler (empty: every authenticated caller)
  std::vector<std::string> admins;      ///< --allow-admin (empty: nobody)
};

struct AccessDecision {
  enum class Outcome { kAllowed, kUnauthenticated, kForbidden };
  Outcome outcome = Outcome::kAllowed;
  std::string caller;   ///< the authenticated name ("" when unauthenticated or authentication is off)
  std::string message;  ///< why not, for the caller (never echoes a token)
  [[nodiscard]] bool allowed() const { return outcome == Outcome::kAllowed; }
};

class AccessPolicy {
 public:
  /// Authentication off: everyone may do everything.
  AccessPolicy() = default;
  /// Reads the token file. kInvalidArgument naming the file and line for an unreadable file, a
  /// line without token and user, or a token given twice.
  static Result<AccessPolicy> load(const AccessOptions& options);

  [[nodiscard]] bool enabled() const { return enabled_; }
  /// Whether the caller (its verified certificate name, "" for none; its Authorization header
  /// value, "" for none) may do `what` to `verb` (named in the refusal).
  [[nodiscard]] AccessDecision check(std::string_view certificate_name, std::string_view authorization, Permission what,
                                     std::string_view verb) const;

 private:
  /// The token's user, "" when no token matches (compared in constant time per token).
  [[nodiscard]] std::string user_of(std::string_view token) const;

  bool enabled_ = false;
  std::vector<std::pair<std::string, std::string>> tokens_;  ///< token → user
  std::set<std::string, std::less<>> schedulers_;
  std::set<std::string, std::less<>> admins_;
};

}  // namespace fracpack::api
