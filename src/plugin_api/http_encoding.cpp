#include "plugin_api/http_encoding.hpp"

#include <zlib.h>

#include <algorithm>
#include <cctype>

#include "plugin_api/trim.hpp"

namespace fracpack::api {
namespace {

constexpr int kGzipWindow = 15 + 16;  // zlib: a gzip wrapper
constexpr int kAutoWindow = 15 + 32;  // zlib: detect gzip or zlib
constexpr std::size_t kChunk = 64u << 10;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

/// Inflates `in` into at most `limit` bytes with a window of `window_bits`.
Result<std::string> inflate_bounded(const std::string& in, std::size_t limit, int window_bits) {
  z_stream z{};
  if (inflateInit2(&z, window_bits) != Z_OK) return Status(Code::kInternal, "zlib could not start inflating");
  struct End {
    z_stream& z;
    ~End() { inflateEnd(&z); }
  } end{z};
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  std::string out;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    const std::size_t before = out.size();
    out.resize(before + kChunk);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + before);
    z.avail_out = static_cast<uInt>(kChunk);
    rc = inflate(&z, Z_NO_FLUSH);
    out.resize(before + (kChunk - z.avail_out));
    if (out.size() > limit) {
      return Status(Code::kResourceExhausted, fmt::format("the body inflates past --max-body ({} bytes)", limit));
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0) return Status(Code::kInvalidArgument, "the compressed body is truncated");
    if (rc != Z_OK && rc != Z_STREAM_END) {
      return Status(Code::kInvalidArgument, fmt::format("the body is not valid in its Content-Encoding: {}", z.msg != nullptr ? z.msg : "zlib error"));
    }
  }
  // One stream, nothing after it: a reader that decodes every gzip member (RFC 1952 allows
  // several) would see another body than this server does.
  if (z.avail_in != 0) {
    return Status(Code::kInvalidArgument, fmt::format("{} bytes follow the compressed body: send one stream", z.avail_in));
  }
  return out;
}

}  // namespace

std::string gzip(std::string_view text) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, kGzipWindow, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);  // the bound leaves room for the whole member in one call
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

bool accepts_gzip(std::string_view accept_encoding) {
  const std::string value = lower(accept_encoding);
  std::string_view rest = value;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string_view item = trim_blanks(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const auto semi = item.find(';');
    if (trim_blanks(item.substr(0, semi)) != "gzip") continue;
    if (semi == std::string_view::npos) return true;
    std::string_view q = trim_blanks(item.substr(semi + 1));
    if (q.rfind("q=", 0) != 0) return true;
    q.remove_prefix(2);
    return q.find_first_not_of("0.") != std::string_view::npos;  // q=0, q=0.0, q=0.000: refused
  }
  return false;
}

Result<std::string> decode_body(std::string_view encoding, std::string body, std::size_t limit) {
  const std::string e = lower(trim_blanks(encoding));
  if (e.empty() || e == "identity") return body;
  if (e == "gzip" || e == "x-gzip") return inflate_bounded(body, limit, kGzipWindow);
  if (e == "deflate") return inflate_bounded(body, limit, kAutoWindow);
  return Status(Code::kFailedPrecondition,
                fmt::format("Content-Encoding {:.32} is not supported: send the body as it is, or gzip it", std::string(encoding)));
}

}  // namespace fracpack::api
