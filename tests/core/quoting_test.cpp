// excerpt() and printable(), and the messages they bound: no error quotes more than a short prefix
// of bad input, however long the input (a 10,000-character pod name made a 10,101-character message).
#include <algorithm>
#include <sstream>

#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "fracpack/server/extender.hpp"
#include "fracpack/k8s/decode.hpp"
#include "fracpack/core/quoting.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "plugin_api/decision_log.hpp"
#include "plugin_api/log_format.hpp"
#include "support/builders.hpp"

namespace fracpack::test {
namespace {

const std::string kLong(10'000, 'a');

/// Fails unless `st` is an error whose message is a few short excerpts long and marks the cut of
/// a 10,0xx-character input ("…(10008 characters)" for "default/" and a 10,000-character name).
void check_bounded(const Status& st) {
  CAPTURE(st.message().substr(0, 300));
  CHECK(!st.is_ok());
  CHECK(st.message().size() < 400);
  CHECK(st.message().find("…(100") != std::string::npos);
  CHECK(st.message().find(" characters)") != std::string::npos);
}

/// Logs through the server's logger setup into a string while alive.
struct CapturedLog {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  CapturedLog() {
    auto logger = std::make_shared<spdlog::logger>("fracpack", std::make_shared<spdlog::sinks::ostream_sink_st>(out));
    api::escape_log_messages(*logger);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;
};

}  // namespace

TEST_CASE("a newline in a node name does not forge a log line; an ESC does not reach the terminal") {
  const std::string raw = "gpu-1\n[2025-01-01 00:00:00.000] [fracpack] [info] bind default/evil to gpu-1 GPUs [0]\x1b[2J";
  const std::string node = R"(gpu-1\n[2025-01-01 00:00:00.000] [fracpack] [info] bind default/evil to gpu-1 GPUs [0]\x1b[2J)";
  CHECK(printable(raw) == node);
  CapturedLog log;
  api::log_bind("default/p", raw, Status(Code::kNotFound, "pod default/p: node " + raw + " is not known to fracpack"), 0.001);
  spdlog::info("node {} sent by the scheduler", raw);  // a site that does not escape: the logger does
  const std::string text = log.out.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 2);  // two lines, not four
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find("to " + node + ": refused") != std::string::npos);
  CHECK(text.find("node " + node + " sent by") != std::string::npos);
}

TEST_CASE("a made-up 1 MiB name is logged as its first 253 characters (the longest Kubernetes name)") {
  CapturedLog log;
  const std::string huge(1u << 20, 'n');
  api::log_bind("default/" + huge, huge, Status(Code::kNotFound, "pod: " + huge), 0.001);
  const std::string text = log.out.str();
  CHECK(text.size() < 4096);
  CHECK(text.find(std::string(253, 'n') + "…(") != std::string::npos);
}

TEST_CASE("excerpt keeps short text and cuts long text to 64 characters with its length") {
  CHECK(excerpt("node-a") == "node-a");
  CHECK(excerpt(std::string(64, 'x')) == std::string(64, 'x'));
  CHECK(excerpt(kLong) == std::string(64, 'a') + "…(10000 characters)");
  CHECK(excerpt("abcdef", 3) == "abc…(6 characters)");
  // Characters, not bytes: a cut never splits a UTF-8 sequence.
  std::string accents;
  for (int i = 0; i < 100; ++i) accents += "é";
  CHECK(excerpt(accents) == accents.substr(0, 128) + "…(100 characters)");
  CHECK(excerpt("") == "");
}

TEST_CASE("excerpt_list names the first items, each cut short, and counts them all") {
  CHECK(excerpt_list({}) == "");
  CHECK(excerpt_list({"a", "b"}) == "a, b");
  CHECK(excerpt_list({"a", "b", "c"}, 2) == "a, b, … (3 in all)");
  CHECK(excerpt_list({std::string(100, 'x')}) == std::string(64, 'x') + "…(100 characters)");
}

TEST_CASE("printable escapes control characters and bytes that are not UTF-8, and nothing else") {
  CHECK(printable("node-a") == "node-a");
  CHECK(printable("a\nb") == "a\\nb");
  CHECK(printable("a\r\tb") == "a\\r\\tb");
  CHECK(printable("\x1b[31mred") == "\\x1b[31mred");
  CHECK(printable(std::string("nul\0byte", 8)) == "nul\\x00byte");
  CHECK(printable("del\x7f") == "del\\x7f");
  CHECK(printable("csi\xc2\x9b") == "csi\\u009b");         // U+009B, a C1 control
  CHECK(printable("ls\xe2\x80\xa8ps") == "ls\\u2028ps");  // U+2028, a line separator
  CHECK(printable("bad\xff\xfe") == "bad\\xff\\xfe");
  CHECK(printable("cut\xe2\x80") == "cut\\xe2\\x80");    // a sequence cut short
  CHECK(printable("émoji 🙂 back\\slash") == "émoji 🙂 back\\slash");
  const std::string once = printable("a\nb\x1b");
  CHECK(printable(once) == once);  // applying it twice changes nothing
  CHECK(once.find('\n') == std::string::npos);
}

TEST_CASE("a pod's long name, namespace, keys and values are quoted short in its errors") {
  check_bounded(PodBuilder(kLong).decode().status());  // was 10,101 characters
  check_bounded(PodBuilder("p", kLong).decode().status());
  PodBuilder label("p");
  label.obj["metadata"]["labels"][kLong] = json::array();  // a label that is not a string, under a long key
  check_bounded(label.decode().status());
  check_bounded(PodBuilder("p").fraction(kLong).decode().status());
  check_bounded(PodBuilder("p").gpu_memory(kLong).decode().status());
  check_bounded(PodBuilder("p").annotation("gpu-memory", kLong).decode().status());
  check_bounded(PodBuilder("p").annotation("nvidia.com/container." + kLong + ".gpu-memory.request", "1Gi").decode().status());
  check_bounded(PodBuilder("p").request("cpu", kLong).decode().status());
  check_bounded(PodBuilder("p").request(kLong, "x").decode().status());
  check_bounded(PodBuilder("p").priority_class(kLong).decode().status());
  check_bounded(PodBuilder("p").label("kai.scheduler/preemptibility", kLong).decode().status());
  PodBuilder container("p");
  container.obj["spec"]["containers"][0]["name"] = kLong;
  check_bounded(container.decode().status());
  PodBuilder priority("p");
  priority.obj["spec"]["priority"] = kLong;
  check_bounded(priority.decode().status());
}

TEST_CASE("a node's, queue's and PodGroup's long names and values are quoted short in their errors") {
  json node = nvf("n", 1, 24000).obj;
  node["metadata"]["name"] = kLong;
  check_bounded(k8s::decode_node(node, DecodeConfig{}).status());
  json label = nvf("n", 1, 24000).obj;
  label["metadata"]["labels"]["nvidia.com/gpu.count"] = kLong;
  check_bounded(k8s::decode_node(label, DecodeConfig{}).status());
  json queue = queue_object("q", "", 1);
  queue["metadata"]["name"] = kLong;
  check_bounded(queues::decode_queue(queue).status());
  json group = {{"kind", "PodGroup"}, {"metadata", {{"name", kLong}}}, {"spec", {{"preemptibility", kLong}}}};
  check_bounded(queues::decode_pod_group(group).status());
}

TEST_CASE("the extender core quotes long names from Bind, Remove and Release short") {
  auto opened = Extender::open(ExtenderOptions{});
  REQUIRE(opened.is_ok());
  Extender& core = **opened;
  REQUIRE(core.apply({nvf("a", 1, 24000).obj}, nullptr).is_ok());
  check_bounded(core.bind("default", kLong, "", "a").status());
  check_bounded(core.bind(kLong, "p", "", "a").status());
  check_bounded(core.remove("Node", kLong));
  check_bounded(core.remove("Queue", kLong));
  check_bounded(core.remove(kLong, "x"));
  json pod = PodBuilder("p").gpu_memory("1Gi").obj;
  REQUIRE(core.filter(pod, {"a"}).is_ok());
  check_bounded(core.bind("default", "p", kLong, "a").status());  // another PodUID than Filter saw
  check_bounded(core.bind("default", "p", "", kLong).status());  // an unknown node
}

}  // namespace fracpack::test
