#include "plugin_api/flag_files.hpp"

#include <fstream>
#include <sstream>

namespace fracpack::api {

Result<std::string> read_flag_file(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_argument("{} {}: cannot read the file", flag, path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Result<std::string> read_pem(const std::string& path, const char* flag) {
  auto text = read_flag_file(path, flag);
  if (text && text->find("-----BEGIN ") == std::string::npos) {
    return invalid_argument("{} {}: not a PEM file (no -----BEGIN line)", flag, path);
  }
  return text;
}

}  // namespace fracpack::api
