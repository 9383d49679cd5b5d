#include "plugin_api/client.hpp"

namespace fracpack::api {

Result<std::unique_ptr<ExtenderClient>> connect(const std::string& server, const ClientTls& tls) {
  if (server.rfind("http://", 0) == 0) {
    if (!tls.ca.empty() || !tls.cert.empty()) {
      return invalid_argument("--server {}: TLS flags need an https:// (or grpc://) server; http:// is plaintext", server);
    }
    return connect_http(server, tls);
  }
  if (server.rfind("https://", 0) == 0) {
    if (tls.ca.empty()) return invalid_argument("--server {}: --tls-ca is needed to trust the server's certificate", server);
    if (tls.cert.empty() != tls.key.empty()) return invalid_argument("mutual TLS needs both --tls-cert and --tls-key");
    return connect_http(server, tls);
  }
  if (server.rfind("grpc://", 0) == 0) return connect_grpc(server.substr(7), tls);
  if (server.find("://") != std::string::npos) {
    return invalid_argument("--server {}: expected http:// or https://host:port (JSON front) or grpc://host:port", server);
  }
  return connect_grpc(server, tls);
}

}  // namespace fracpack::api
