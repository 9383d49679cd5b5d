// simdjson's On-Demand parser with the padded copy of the text it needs, both kept between calls:
// the extender's large bodies (ExtenderArgs with 5,000 NodeNames, Filter answers) are read with it
// on both sides of the wire (extender_args.cpp, http_client.cpp).
#pragma once

#include <string>
#include <string_view>

#include <simdjson.h>

namespace fracpack::api {

class OnDemandParser {
 public:
  /// Starts reading `text` into `doc`; `doc`, and the views it hands out, are valid until the next
  /// iterate() or trim(). simdjson reads up to SIMDJSON_PADDING bytes past the end: `text` is
  /// copied into a padded buffer first.
  simdjson::error_code iterate(std::string_view text, simdjson::ondemand::document& doc) {
    buffer_.assign(text);
    buffer_.resize(text.size() + simdjson::SIMDJSON_PADDING, ' ');
    return parser_.iterate(simdjson::padded_string_view(buffer_.data(), text.size(), buffer_.size())).get(doc);
  }

  /// Gives back buffers above `keep` bytes (one 8 MiB body must not pin its memory for good).
  void trim(std::size_t keep) {
    if (buffer_.capacity() > keep) std::string().swap(buffer_);
    if (parser_.capacity() > keep) parser_ = simdjson::ondemand::parser{};
  }

 private:
  std::string buffer_;  ///< the text, padded
  simdjson::ondemand::parser parser_;
};

}  // namespace fracpack::api
