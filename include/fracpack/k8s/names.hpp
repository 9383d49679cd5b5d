// Kubernetes object name rules (k8s.io/apimachinery/pkg/util/validation), for
// the decoders and the server's messages.
#pragma once

#include <string_view>

namespace fracpack::k8s {

/// RFC 1123 label: 1–63 of [a-z0-9-], starting and ending alphanumeric (namespaces, containers).
constexpr bool is_dns_label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return s.front() != '-' && s.back() != '-';
}

/// RFC 1123 subdomain: 1–253 characters, dot-separated labels (pod and node names).
constexpr bool is_dns_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = s.find('.', start);
    const std::string_view part = s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (!is_dns_label(part)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

}  // namespace fracpack::k8s
