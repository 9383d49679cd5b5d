// Throwaway PKI for TLS tests, made with the openssl command line (Debian package `openssl`) in a
// temporary directory: a CA, a server certificate for 127.0.0.1/localhost and a client certificate
// signed by it, and a stranger CA with its own client certificate. Removed on destruction.
// Throws std::runtime_error when openssl fails (doctest reports it; a benchmark stops).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include <stdexcept>

#include <fmt/format.h>

namespace fracpack::test {

struct TlsFiles {
  std::filesystem::path dir;
  std::string ca, server_cert, server_key, client_cert, client_key;
  std::string stranger_ca, stranger_cert, stranger_key;

  TlsFiles() {
    dir = std::filesystem::temp_directory_path() / fmt::format("fracpack-tls-{}-{}", ::getpid(), std::rand());
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "server.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n";
    std::ofstream(dir / "client.ext") << "extendedKeyUsage=clientAuth\n";
    make_ca("ca");
    make_leaf("server", "ca", "server.ext");
    make_leaf("client", "ca", "client.ext");
    make_ca("stranger-ca");
    make_leaf("stranger", "stranger-ca", "client.ext");
    ca = path("ca.pem");
    server_cert = path("server.pem");
    server_key = path("server.key");
    client_cert = path("client.pem");
    client_key = path("client.key");
    stranger_ca = path("stranger-ca.pem");
    stranger_cert = path("stranger.pem");
    stranger_key = path("stranger.key");
  }
  ~TlsFiles() { std::filesystem::remove_all(dir); }

  /// A client certificate signed by the CA with subject `subject` ("/CN=a/CN=b"): its PEM and
  /// key paths, files named after `name`.
  [[nodiscard]] std::pair<std::string, std::string> client_with_subject(const std::string& name, const std::string& subject) const {
    run(fmt::format("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj '{1}' "
                    "-keyout {0}.key -out {0}.csr && openssl x509 -req -in {0}.csr -CA ca.pem -CAkey ca.key "
                    "-CAcreateserial -days 2 -extfile client.ext -out {0}.pem", name, subject));
    return {path(name + ".pem"), path(name + ".key")};
  }
  TlsFiles(const TlsFiles&) = delete;
  TlsFiles& operator=(const TlsFiles&) = delete;

 private:
  [[nodiscard]] std::string path(const std::string& name) const { return (dir / name).string(); }
  void run(const std::string& command) const {
    const std::string full = fmt::format("cd '{}' && {} > openssl.log 2>&1", dir.string(), command);
    if (std::system(full.c_str()) != 0) throw std::runtime_error("openssl failed: " + command);  // tests and benchmarks alike
  }
  void make_ca(const std::string& name) const {
    run(fmt::format("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
                    "-subj /CN={0} -keyout {0}.key -out {0}.pem", name));
  }
  void make_leaf(const std::string& name, const std::string& ca_name, const std::string& ext) const {
    run(fmt::format("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN={0} "
                    "-keyout {0}.key -out {0}.csr && openssl x509 -req -in {0}.csr -CA {1}.pem -CAkey {1}.key "
                    "-CAcreateserial -days 2 -extfile {2} -out {0}.pem", name, ca_name, ext));
  }
};

}  // namespace fracpack::test
