// A CSV file as rows of fields, read with libcsv (strict RFC 4180). Internal to src/trace/.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "fracpack/core/status.hpp"

namespace fracpack::trace {

struct CsvTable {
  std::string file;                       ///< for messages
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  ///< data rows (header excluded)

  /// Column index of `name`, or -1.
  [[nodiscard]] int column(std::string_view name) const;
  /// "<file> line <n>" for data row `row` (the header is line 1).
  [[nodiscard]] std::string where(std::size_t row) const;
};

/// Reads the whole file. kNotFound when it does not exist or cannot be opened; kInvalidArgument
/// for something other than a regular file (a device, a directory), a file over 1 GiB, malformed
/// CSV, or a row whose field count differs from the header's. A UTF-8 byte order mark is skipped.
Result<CsvTable> read_csv(const std::filesystem::path& path);

}  // namespace fracpack::trace
