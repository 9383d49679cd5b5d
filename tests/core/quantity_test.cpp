#include "fracpack/core/quantity.hpp"

#include <doctest/doctest.h>

namespace fracpack {
namespace {

std::int64_t bytes(std::string_view s) {
  auto r = parse_bytes(s, "test");
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  return r->count();
}
std::int64_t milli(std::string_view s) {
  auto r = parse_milli_cpu(s, "test");
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  return r->count();
}
std::string error(std::string_view s) {
  auto r = parse_bytes(s, "annotation \"x\" of pod a/b");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == Code::kInvalidArgument);
  return r.status().message();
}

TEST_CASE("binary suffixes are powers of 1024") {
  CHECK(bytes("1Ki") == 1024);
  CHECK(bytes("16Gi") == 16LL << 30);
  CHECK(bytes("24000Mi") == 24000LL << 20);
  CHECK(bytes("1Ti") == 1LL << 40);
  CHECK(bytes("1Pi") == 1LL << 50);
  CHECK(bytes("1Ei") == 1LL << 60);
}

TEST_CASE("decimal suffixes are powers of 1000") {
  CHECK(bytes("20G") == 20'000'000'000LL);
  CHECK(bytes("1k") == 1000);
  CHECK(bytes("3M") == 3'000'000);
  CHECK(bytes("2T") == 2'000'000'000'000LL);
  CHECK(bytes("1P") == 1'000'000'000'000'000LL);
  CHECK(bytes("1E") == 1'000'000'000'000'000'000LL);  // a bare E is exa, not an exponent
  CHECK(bytes("12") == 12);
}

TEST_CASE("milli, micro and nano round up to the unit asked for") {
  CHECK(milli("250m") == 250);
  CHECK(milli("2") == 2000);
  CHECK(milli("0.5") == 500);
  CHECK(milli("0.1m") == 1);     // 0.0001 cores → 1m, rounded up like MilliValue()
  CHECK(milli("1500u") == 2);    // 1.5m → 2m
  CHECK(bytes("1n") == 1);       // any positive amount is at least one byte
  CHECK(bytes("1500m") == 2);    // 1.5 bytes → 2
}

TEST_CASE("exponents") {
  CHECK(bytes("1e3") == 1000);
  CHECK(bytes("12E6") == 12'000'000);
  CHECK(bytes("1.5e3") == 1500);
  CHECK(bytes("1e-3") == 1);      // 0.001 byte rounds up to 1
  CHECK(bytes("5e+2") == 500);
  CHECK(milli("1e-3") == 1);
}

TEST_CASE("decimals and signs") {
  CHECK(bytes("1.5Gi") == 3LL << 29);
  CHECK(bytes("1.5Ki") == 1536);
  CHECK(bytes(".5Ki") == 512);
  CHECK(bytes("5.") == 5);
  CHECK(bytes("+1Ki") == 1024);
  CHECK(bytes("0.1") == 1);       // rounds up
  CHECK(bytes("0") == 0);
  CHECK(bytes("-0") == 0);
  CHECK(bytes("000016Gi") == 16LL << 30);
  auto q = parse_quantity("-1.5Gi", "test");
  REQUIRE(q.is_ok());
  auto v = scaled_value_ceil(*q, 0, "-1.5Gi", "test");
  REQUIRE(v.is_ok());
  CHECK(*v == -(3LL << 29));
}

TEST_CASE("errors name the value, the source and the rule") {
  std::string gb = error("16GB");
  CHECK(gb.find("\"16GB\"") != std::string::npos);
  CHECK(gb.find("annotation \"x\" of pod a/b") != std::string::npos);
  CHECK(gb.find("unknown suffix \"GB\"") != std::string::npos);
  CHECK(error("16gi").find("did you mean \"Gi\"") != std::string::npos);
  CHECK(error("2GiB").find("did you mean \"Gi\"") != std::string::npos);
  CHECK(error("2GB").find("Kubernetes writes G for powers of 1000 or Gi for powers of 1024") != std::string::npos);
  CHECK(error("2xi").find("unknown suffix \"xi\" (valid:") != std::string::npos);
  CHECK(error("1e30Gi").find("an exponent \"e30\" and a suffix \"Gi\" together") != std::string::npos);
  CHECK(error("").find("empty") != std::string::npos);
  CHECK(error("-1Gi").find("negative") != std::string::npos);
  CHECK(error("abc").find("does not start with a number") != std::string::npos);
  CHECK(error("1.2.3").find("two decimal points") != std::string::npos);
  CHECK(error("1e").find("unknown suffix") != std::string::npos);
  CHECK(error("1ex").find("unknown suffix") != std::string::npos);
  CHECK(error(" 1Gi").find("does not start with a number") != std::string::npos);
  CHECK(error("1Gi ").find("unknown suffix") != std::string::npos);
  CHECK(error("NaN").find("does not start") != std::string::npos);
  CHECK(error("inf").find("does not start") != std::string::npos);
  CHECK(error(".").find("does not start") != std::string::npos);
  CHECK(error("-").find("does not start") != std::string::npos);
}

TEST_CASE("overflow is an error, never a wrapped number") {
  CHECK(error("8Ei").find("overflow") != std::string::npos);
  CHECK(error("9223372036854775808").find("overflow") != std::string::npos);
  CHECK(error("1e19").find("overflow") != std::string::npos);
  CHECK(error("1e999999").find("overflow") != std::string::npos);
  CHECK(error("99999999999999999999999999999999999").find("overflow") != std::string::npos);
  CHECK(bytes("9223372036854775807") == INT64_MAX);
  CHECK(bytes("7Ei") == 7LL << 60);
  CHECK(bytes("1e-999999") == 1);
  auto cpu = parse_milli_cpu("9223372036854775807", "cpu");
  CHECK_FALSE(cpu.is_ok());  // fits as cores, not as millicores
}

TEST_CASE("command-line memory: a plain number is MiB, anything with a unit is a quantity") {
  for (auto [text, mib] : {std::pair{"2000", 2000}, {"2000.0", 2000}, {"2e3", 2000}, {"1.5", 2}, {"2Gi", 2048}, {"500M", 477}}) {
    CAPTURE(text);
    auto r = parse_mib_or_quantity(text, "--reserved-gpu-memory");
    REQUIRE(r.is_ok());
    CHECK(r->count() == mib);
  }
  CHECK_FALSE(parse_mib_or_quantity("2GiB", "x").is_ok());
  CHECK_FALSE(parse_mib_or_quantity("-1", "x").is_ok());
}

TEST_CASE("counts must be whole") {
  auto two = parse_count("2", "nvidia.com/gpu");
  REQUIRE(two.is_ok());
  CHECK(*two == 2);
  auto k = parse_count("1k", "x");
  REQUIRE(k.is_ok());
  CHECK(*k == 1000);
  auto half = parse_count("0.5", "nvidia.com/gpu");
  REQUIRE_FALSE(half.is_ok());
  CHECK(half.status().message().find("whole number") != std::string::npos);
  CHECK_FALSE(parse_count("-1", "x").is_ok());
  auto huge = parse_count("9300000000000000", "example.com/foo");  // fits a count, not a milli-count
  REQUIRE(huge.is_ok());
  CHECK(*huge == 9'300'000'000'000'000);
  auto e = parse_count("4e15", "x");
  REQUIRE(e.is_ok());
  CHECK(*e == 4'000'000'000'000'000);
  CHECK(parse_count("1.0", "x").is_ok());
  CHECK_FALSE(parse_count("1.5", "x").is_ok());
  CHECK_FALSE(parse_count("1m", "x").is_ok());
}

}  // namespace
}  // namespace fracpack
