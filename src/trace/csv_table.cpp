#include "trace/csv_table.hpp"

#include <csv.h>

#include <fstream>

#include <fmt/format.h>

namespace fracpack::trace {

int CsvTable::column(std::string_view name) const {
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  return -1;
}

std::string CsvTable::where(std::size_t row) const { return fmt::format("{} line {}", file, row + 2); }

namespace {

constexpr std::uintmax_t kMaxCsvBytes = std::uintmax_t{1} << 30;

struct Sink {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> current;
};

void on_field(void* text, std::size_t len, void* data) {
  static_cast<Sink*>(data)->current.emplace_back(static_cast<const char*>(text), len);
}

void on_row(int, void* data) {
  auto* sink = static_cast<Sink*>(data);
  sink->rows.push_back(std::move(sink->current));
  sink->current.clear();
}

}  // namespace

Result<CsvTable> read_csv(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) return Status(Code::kNotFound, fmt::format("{}: no such file", path.string()));
  if (!std::filesystem::is_regular_file(status)) {
    return invalid_argument("{}: not a regular file (a CSV file is required)", path.string());
  }
  if (std::filesystem::file_size(path, ec) > kMaxCsvBytes) {
    return invalid_argument("{}: larger than {} MiB; a trace file is a few MiB", path.string(), kMaxCsvBytes >> 20);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Code::kNotFound, fmt::format("{}: cannot open the file", path.string()));
  csv_parser parser;
  if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI) != 0) return Status(Code::kInternal, path.string() + ": csv_init failed");
  Sink sink;
  std::vector<char> buffer(1 << 16);
  bool ok = true;
  while (ok && in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got > 0 && csv_parse(&parser, buffer.data(), got, on_field, on_row, &sink) != got) ok = false;
  }
  if (ok && csv_fini(&parser, on_field, on_row, &sink) != 0) ok = false;
  const int error = ok ? 0 : csv_error(&parser);
  csv_free(&parser);
  if (!ok) {
    return invalid_argument("{}: not valid CSV near line {}: {}", path.string(), sink.rows.size() + 1,
                            error == CSV_EPARSE ? "a quote that is not closed, or text right after a closing quote (RFC 4180)"
                                                : csv_strerror(error));
  }
  CsvTable table;
  table.file = path.string();
  if (sink.rows.empty()) return invalid_argument("{}: empty file (a header line is required)", table.file);
  table.header = std::move(sink.rows.front());
  if (!table.header.empty() && table.header[0].rfind("\xEF\xBB\xBF", 0) == 0) table.header[0].erase(0, 3);  // a UTF-8 byte order mark
  for (std::size_t r = 1; r < sink.rows.size(); ++r) {
    auto& row = sink.rows[r];
    if (row.size() == 1 && row[0].empty()) continue;  // a blank line
    if (row.size() != table.header.size()) {
      return invalid_argument("{} line {}: {} fields, the header has {}", table.file, r + 1, row.size(), table.header.size());
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace fracpack::trace
