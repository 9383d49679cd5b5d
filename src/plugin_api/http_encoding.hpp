// Content-Encoding for the HTTP server (zlib): answers gzipped, request bodies inflated under a
// limit. The limit applies to the inflated bytes: a 0.26 MB gzip body can inflate to 256 MiB.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "fracpack/core/status.hpp"

namespace fracpack::api {

/// `text` as a gzip member (RFC 1952), at zlib's fastest level: the answers are JSON with long
/// runs of repeated reasons, and compressing must not cost more than computing them.
std::string gzip(std::string_view text);

/// Whether `accept_encoding` (an Accept-Encoding value) admits gzip: a "gzip" token whose q is
/// not 0.
bool accepts_gzip(std::string_view accept_encoding);

/// Inflates a body sent with Content-Encoding `encoding` ("gzip", "deflate", "identity" or "").
/// kResourceExhausted when it inflates past `limit` bytes (reading stops there);
/// kInvalidArgument when it is not valid in that encoding; kFailedPrecondition for other
/// encodings (HTTP 415).
Result<std::string> decode_body(std::string_view encoding, std::string body, std::size_t limit);

}  // namespace fracpack::api
