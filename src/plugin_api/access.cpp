#include "plugin_api/access.hpp"

#include <cctype>
#include <optional>

#include <fmt/format.h>

#include "plugin_api/flag_files.hpp"
#include "plugin_api/trim.hpp"

namespace fracpack::api {
namespace {

/// The next comma-separated field of `line` (quotes around it dropped), consumed.
std::string_view next_field(std::string_view& line) {
  const auto comma = line.find(',');
  std::string_view field = trim_blanks(line.substr(0, comma));
  line = comma == std::string_view::npos ? std::string_view{} : line.substr(comma + 1);
  if (field.size() >= 2 && field.front() == '"' && field.back() == '"') field = field.substr(1, field.size() - 2);
  return field;
}

/// Equal without an early exit at the first differing byte (the token's length still shows).
bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

Status parse_tokens(const std::string& file, const std::string& text, std::vector<std::pair<std::string, std::string>>& out) {
  std::string_view rest = text;
  for (int number = 1; !rest.empty(); ++number) {
    const auto newline = rest.find('\n');
    std::string_view line = trim_blanks(rest.substr(0, newline));
    rest = newline == std::string_view::npos ? std::string_view{} : rest.substr(newline + 1);
    if (line.empty() || line.front() == '#') continue;
    const std::string_view token = next_field(line);
    const std::string_view user = next_field(line);
    if (token.empty() || user.empty()) {
      return Status(Code::kInvalidArgument, fmt::format("--token-file {} line {}: expected token,user[,uid[,groups]]", file, number));
    }
    for (const auto& [known, _] : out) {
      if (known == token) return Status(Code::kInvalidArgument, fmt::format("--token-file {} line {}: a token given twice", file, number));
    }
    out.emplace_back(token, user);
  }
  if (out.empty()) return Status(Code::kInvalidArgument, fmt::format("--token-file {}: no token in it", file));
  return Status::ok();
}

/// The token of an `Authorization: Bearer <token>` value; the scheme's case does not matter
/// (RFC 9110 §11.1).
std::optional<std::string_view> bearer_token(std::string_view authorization) {
  constexpr std::string_view kBearer = "bearer";
  if (authorization.size() <= kBearer.size() || (authorization[kBearer.size()] != ' ' && authorization[kBearer.size()] != '\t')) return std::nullopt;
  for (std::size_t i = 0; i < kBearer.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kBearer[i]) return std::nullopt;
  }
  return trim_blanks(authorization.substr(kBearer.size()));
}

}  // namespace

std::string_view permission_name(Permission p) {
  switch (p) {
    case Permission::kSchedule: return "schedule";
    case Permission::kRead: return "read";
    case Permission::kAdminister: return "administer";
  }
  return "?";
}

Result<AccessPolicy> AccessPolicy::load(const AccessOptions& options) {
  AccessPolicy policy;
  policy.enabled_ = options.client_certificates || !options.token_file.empty();
  if (!options.token_file.empty()) {
    auto text = read_flag_file(options.token_file, "--token-file");
    if (!text) return text.status();
    if (Status st = parse_tokens(options.token_file, *text, policy.tokens_); !st.is_ok()) return st;
  }
  policy.schedulers_.insert(options.schedulers.begin(), options.schedulers.end());
  policy.admins_.insert(options.admins.begin(), options.admins.end());
  return policy;
}

std::string AccessPolicy::user_of(std::string_view token) const {
  std::string user;
  for (const auto& [known, name] : tokens_) {
    if (same_secret(known, token)) user = name;  // no early exit: every token is compared
  }
  return user;
}

AccessDecision AccessPolicy::check(std::string_view certificate_name, std::string_view authorization, Permission what,
                                   std::string_view verb) const {
  using Outcome = AccessDecision::Outcome;
  if (!enabled_) return {};
  AccessDecision d;
  d.caller = std::string(certificate_name);
  if (d.caller.empty()) {
    if (auto token = bearer_token(authorization)) d.caller = user_of(*token);
  }
  if (d.caller.empty()) {
    d.outcome = Outcome::kUnauthenticated;
    d.message = authorization.empty() ? fmt::format("{}: authenticate with a client certificate or a bearer token", verb)
                                      : fmt::format("{}: the bearer token is not one this server knows", verb);
    return d;
  }
  const bool scheduler = schedulers_.empty() || schedulers_.contains(d.caller);
  const bool admin = admins_.contains(d.caller);
  const bool allowed = what == Permission::kSchedule ? scheduler : what == Permission::kRead ? scheduler || admin : admin;
  if (!allowed) {
    d.outcome = Outcome::kForbidden;
    d.message = fmt::format("{}: caller {:?} may not {} here ({})", verb, d.caller.substr(0, 64), permission_name(what),
                            what == Permission::kAdminister ? "--allow-admin names who may" : "--allow-scheduler names who may");
  }
  return d;
}

}  // namespace fracpack::api
