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
  const std::string error = ok ? "" : csv_strerror(csv_error(&parser));
  csv_free(&parser);
  if (!ok) return invalid_argument("{}: not valid CSV near row {}: {}", path.string(), sink.rows.size() + 1, error);
  CsvTable table;
  table.file = path.string();
  if (sink.rows.empty()) return invalid_argument("{}: empty file (a header line is required)", table.file);
  table.header = std::move(sink.rows.front());
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
