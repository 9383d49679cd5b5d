// fracpack serve's start order: a probe that answers means every port the flags name listens.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <doctest/doctest.h>

#include "fracpack/v1/cluster.grpc.pb.h"
#include "support/raw_connection.hpp"
#include "support/server_process.hpp"
#include "support/temp_files.hpp"

namespace fracpack::test {
namespace {

namespace fs = std::filesystem;

TEST_CASE("serve: gRPC listens before the HTTP ports, so an answered /healthz means every port is up") {
  const fs::path log = fs::temp_directory_path() / fmt::format("fracpack-startup-{}.log", getpid());
  const int grpc_port = free_port();
  ServerProcess server(FRACPACK_BINARY, {"--state", ":memory:", "--grpc", fmt::format("127.0.0.1:{}", grpc_port)},
                       free_port(), log.string());
  // The moment /healthz first answered (ServerProcess returned), gRPC must already listen: a call
  // without wait-for-ready is not refused.
  { RawConnection connected(grpc_port); }
  auto stub = v1::Cluster::NewStub(grpc::CreateChannel(fmt::format("127.0.0.1:{}", grpc_port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::SnapshotRequest request;
  v1::SnapshotResponse response;
  const grpc::Status status = stub->Snapshot(&ctx, request, &response);
  CHECK_MESSAGE(status.ok(), status.error_code() << ": " << status.error_message());
  // The order itself, as the log says it (the check above would pass by luck on a fast machine).
  const std::string text = read_file(log);
  const auto grpc_line = text.find("serving gRPC");
  const auto http_line = text.find("serving kube-scheduler extender");
  REQUIRE(grpc_line != std::string::npos);
  REQUIRE(http_line != std::string::npos);
  CHECK(grpc_line < http_line);
  server.kill9();
  fs::remove(log);
}

}  // namespace
}  // namespace fracpack::test
