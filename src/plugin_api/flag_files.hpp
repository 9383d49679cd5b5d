// Files named by the server's and clients' flags (TLS material, the API server's token and CA).
#pragma once

#include <string>

#include "fracpack/core/status.hpp"

namespace fracpack::api {

/// A file's whole content. kInvalidArgument naming `flag` and the path when it cannot be read.
Result<std::string> read_flag_file(const std::string& path, const char* flag);

/// read_flag_file() for PEM files: also kInvalidArgument when there is no -----BEGIN line.
Result<std::string> read_pem(const std::string& path, const char* flag);

}  // namespace fracpack::api
