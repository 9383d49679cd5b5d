// The kube-scheduler HTTP extender front, driven over loopback like kube-scheduler drives it.
#include <httplib.h>

#include <doctest/doctest.h>

#include "plugin_api/http_front.hpp"
#include "support/builders.hpp"
#include "support/front_fixture.hpp"
#include "support/kube_payloads.hpp"

namespace fracpack::test {
namespace {

api::HttpOptions http_options(bool gzip) {
  api::HttpOptions options;
  options.listen.max_body = 1u << 20;
  options.listen.gzip = gzip;
  return options;
}

struct Server : FrontFixture<api::HttpFront, api::HttpOptions> {
  explicit Server(bool gzip = false) : FrontFixture(http_options(gzip)) {}
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(10, 0);
    return c;
  }
  json post(const std::string& path, const json& body, int expect = 200) const {
    auto res = client().Post(path.c_str(), body.dump(), "application/json");
    REQUIRE(res);
    CHECK_MESSAGE(res->status == expect, res->body);
    return json::parse(res->body, nullptr, false);
  }
};

json node_list(std::initializer_list<json> nodes) {
  return {{"apiVersion", "v1"}, {"kind", "NodeList"}, {"metadata", {{"resourceVersion", "1"}}}, {"items", json::array_t(nodes)}};
}

TEST_CASE("nodeCacheCapable: false — full NodeList in, passing Nodes out; then Prioritize and Bind") {
  Server s;
  json pod = kube_pod("chat-0", R"({"nvidia.com/container.server.gpu-memory.request": "40Gi"})");
  json nodes = node_list({kube_node("h200-a", 8, "143771"), kube_node("h200-b", 8, "143771")});
  json f = s.post("/filter", {{"Pod", pod}, {"Nodes", nodes}});
  REQUIRE(f["Nodes"]["items"].size() == 2);
  CHECK(f["Nodes"]["items"][0]["metadata"]["name"] == "h200-a");
  CHECK(f["Error"] == "");
  CHECK(f["FailedNodes"].empty());
  json p = s.post("/prioritize", {{"Pod", pod}, {"Nodes", nodes}});
  REQUIRE(p.is_array());
  REQUIRE(p.size() == 2);
  for (const auto& hs : p) {
    CHECK(hs["Score"].get<int>() >= 0);
    CHECK(hs["Score"].get<int>() <= 10);
  }
  json b = s.post("/bind", {{"PodName", "chat-0"}, {"PodNamespace", "team-a"}, {"PodUID", "6b1f0f7e-chat-0"}, {"Node", "h200-b"}});
  CHECK(b["Error"] == "");
  CHECK(s.core->snapshot().bindings[0].node == "h200-b");
}

TEST_CASE("nodeCacheCapable: false — a Node sent again changed is seen as it is now; a heartbeat changes nothing") {
  Server s;
  json pod = kube_pod("p", R"({"nvidia.com/container.server.gpu-memory.request": "10Gi"})");
  auto filter = [&](const json& node) { return s.post("/filter", {{"Pod", pod}, {"Nodes", node_list({node, kube_node("b", 8, "81559")})}}); };
  json a = kube_node("a", 8, "81559");
  CHECK(filter(a)["Nodes"]["items"].size() == 2);
  // The same Node, cordoned (a new resourceVersion): no longer a candidate.
  json cordoned = a;
  cordoned["metadata"]["resourceVersion"] = "998878";
  cordoned["spec"]["unschedulable"] = true;
  json f = filter(cordoned);
  REQUIRE(f["Nodes"]["items"].size() == 1);
  CHECK(f["Nodes"]["items"][0]["metadata"]["name"] == "b");
  CHECK(f["FailedAndUnresolvableNodes"].contains("a"));
  // A kubelet heartbeat (new resourceVersion, new condition time): still cordoned.
  json heartbeat = cordoned;
  heartbeat["metadata"]["resourceVersion"] = "998879";
  heartbeat["status"]["conditions"][3]["lastHeartbeatTime"] = "2026-11-30T10:00:00Z";
  CHECK(filter(heartbeat)["Nodes"]["items"].size() == 1);
  // Uncordoned, with its GPU memory label changed to one too small for the pod.
  json small = a;
  small["metadata"]["resourceVersion"] = "998880";
  small["metadata"]["labels"]["nvidia.com/gpu.memory"] = "8000";
  f = filter(small);
  REQUIRE(f["Nodes"]["items"].size() == 1);
  CHECK(f["Nodes"]["items"][0]["metadata"]["name"] == "b");
  // An update fracpack cannot read: the node is not placed on by its old object.
  json broken = a;
  broken["metadata"]["resourceVersion"] = "998881";
  broken["metadata"]["labels"]["nvidia.com/gpu.memory"] = "-5";
  f = filter(broken);
  REQUIRE(f["Nodes"]["items"].size() == 1);
  CHECK(f["FailedAndUnresolvableNodes"]["a"].get<std::string>().find("the Node sent was refused: ") == 0);
  // Sent back as it was first: a candidate again.
  a["metadata"]["resourceVersion"] = "998882";
  CHECK(filter(a)["Nodes"]["items"].size() == 2);
}

TEST_CASE("a full Node that does not decode is answered with why, and does not keep good Nodes out") {
  Server s;
  json pod = kube_pod("p", R"({"nvidia.com/container.server.gpu-memory.request": "10Gi"})");
  json evil = kube_node("evil", 8, "-5");
  json nodes = node_list({kube_node("good", 8, "81559"), evil});
  json f = s.post("/filter", {{"Pod", pod}, {"Nodes", nodes}});
  REQUIRE(f["Nodes"]["items"].size() == 1);
  CHECK(f["Nodes"]["items"][0]["metadata"]["name"] == "good");
  const std::string why = f["FailedAndUnresolvableNodes"]["evil"];
  CHECK(why.find("the Node sent was refused: ") == 0);
  CHECK(why.find("nvidia.com/gpu.memory") != std::string::npos);
}

TEST_CASE("nodeCacheCapable: true — NodeNames in and out; infeasible pods are answers, not errors") {
  Server s;
  REQUIRE(s.core->apply({kube_node("small", 1, "16000"), nvf("big", 1, 81920).obj}, nullptr).is_ok());
  json pod = kube_pod("big-model", R"({"nvidia.com/container.server.gpu-memory.request": "40Gi"})");
  json f = s.post("/filter", {{"Pod", pod}, {"NodeNames", {"small", "big", "stranger"}}});
  CHECK(f["NodeNames"] == json::array({"big"}));
  CHECK(f["FailedAndUnresolvableNodes"]["small"].get<std::string>().find("GPUs smaller than the memory request") != std::string::npos);
  CHECK(f["FailedAndUnresolvableNodes"].contains("stranger"));
  CHECK(f["Error"] == "");
  // Every returned name is one that was sent.
  for (const auto& [name, _] : f["FailedNodes"].items()) CHECK((name == "small" || name == "big" || name == "stranger"));
  // FailedNodes carry the category only (kube-scheduler counts identical reasons); /explain has the numbers.
  CHECK(f["FailedAndUnresolvableNodes"]["small"] == "node(s) had GPUs smaller than the memory request");
  json why = s.post("/explain", {{"Pod", pod}});
  CHECK(why["Status"] == "Success");
  CHECK(why["Reason"] == "1/2 nodes are available; the policy's choice is big");
  CHECK(why["Nodes"]["big"] == "fits");
  CHECK(why["Nodes"]["small"].get<std::string>().find("requested 40960 MiB") != std::string::npos);
  json huge = s.post("/explain", {{"Pod", kube_pod("huge", R"({"nvidia.com/container.server.gpu-memory.request": "200Gi"})")}});
  CHECK(huge["Status"] == "UnschedulableAndUnresolvable");
  CHECK(huge["Reason"].get<std::string>().find("0/2 nodes are available") == 0);
  json none = s.post("/filter", {{"Pod", pod}, {"NodeNames", json::array()}});
  CHECK(none["NodeNames"].empty());  // never a name that was not sent
  CHECK(s.post("/prioritize", {{"Pod", pod}, {"NodeNames", json::array()}}).empty());
  json bad = s.post("/filter", {{"Pod", kube_pod("bad", R"({"gpu-fraction": "2"})")}, {"NodeNames", {"big"}}});
  CHECK(bad["FailedAndUnresolvableNodes"]["big"].get<std::string>().find("gpu-fraction") != std::string::npos);
  // The answers are written as text, not built as documents: names that need escaping come back
  // intact, a name sent twice is answered once per map, and scores stay in the order sent.
  const std::string odd = "we\"ird\\node\u00e9\n";
  json tricky = s.post("/filter", {{"Pod", pod}, {"NodeNames", {"big", odd, "small", odd, "big"}}});
  CHECK(tricky["NodeNames"] == json::array({"big"}));  // a passing node sent twice: listed once
  CHECK(tricky["FailedAndUnresolvableNodes"].size() == 2);
  CHECK(tricky["FailedAndUnresolvableNodes"].contains(odd));
  json scores = s.post("/prioritize", {{"Pod", pod}, {"NodeNames", {odd, "big"}}});
  REQUIRE(scores.size() == 2);
  CHECK(scores[0]["Host"] == odd);
  CHECK(scores[0]["Score"] == 0);
  CHECK(scores[1]["Host"] == "big");
  CHECK(scores[1]["Score"].get<int>() > 0);
  // Names are read as JSON strings: escapes decoded, the field given twice counts once (the last).
  auto c = s.client();
  auto escaped = c.Post("/filter", R"({"NodeNames":["ghost"],"Pod":)" + pod.dump() + R"(,"NodeNames":["b\u0069g","sm\u0061ll"],"Extra":{"ok":[1,2.5e3,null]}})",
                        "application/json");
  REQUIRE(escaped);
  REQUIRE(escaped->status == 200);
  json e = json::parse(escaped->body);
  CHECK(e["NodeNames"] == json::array({"big"}));
  CHECK(e["FailedNodes"].size() + e["FailedAndUnresolvableNodes"].size() == 1);
  CHECK(e["FailedAndUnresolvableNodes"].count("ghost") + e["FailedNodes"].count("ghost") == 0);
}

TEST_CASE("Bind refusals are answers with Error set; Preempt answers meta victims") {
  Server s;
  REQUIRE(s.core->apply({nvf("a", 1, 81920).obj}, nullptr).is_ok());
  json unknown = s.post("/bind", {{"PodName", "ghost"}, {"PodNamespace", "x"}, {"PodUID", "u"}, {"Node", "a"}});
  CHECK(unknown["Error"].get<std::string>().find("was not seen by Filter") != std::string::npos);
  std::vector<std::string> conflicts;
  PodBuilder low("low");
  low.whole(1).priority_class("train").bound_to("a").obj["metadata"]["uid"] = "u-low";
  REQUIRE(s.core->sync({low.obj}, false, &conflicts).is_ok());
  json high = PodBuilder("high").whole(1).priority_class("build").obj;
  json pre = s.post("/preempt", {{"Pod", high}, {"NodeNameToMetaVictims", {{"a", {{"Pods", {{{"UID", "u-low"}}}}, {"NumPDBViolations", 0}}}}}});
  CHECK(pre["NodeNameToMetaVictims"]["a"]["Pods"][0]["UID"] == "u-low");
  // Victims of the wrong shape are the caller's mistake, named, not dropped.
  CHECK(s.post("/preempt", {{"Pod", high}, {"NodeNameToMetaVictims", {{"a", 5}}}}, 400)["Error"] ==
        "ExtenderPreemptionArgs.NodeNameToMetaVictims.a must be an object with Pods");
  CHECK(s.post("/preempt", {{"Pod", high}, {"NodeNameToMetaVictims", {{"a", {{"Pods", {{{"UID", 5}}}}}}}}}, 400)["Error"] ==
        "ExtenderPreemptionArgs.NodeNameToMetaVictims.a.Pods[0] needs UID (a string)");
  CHECK(s.post("/preempt", {{"Pod", high}, {"NodeNameToVictims", {{"a", {{"Pods", {json::object()}}}}}}}, 400)["Error"] ==
        "ExtenderPreemptionArgs.NodeNameToVictims.a.Pods[0] needs metadata.uid (a string)");
}

TEST_CASE("a second server on a port already served fails to start instead of sharing it") {
  Server first;
  auto opened = Extender::open(ExtenderOptions{});
  REQUIRE(opened.is_ok());
  api::Metrics metrics;
  api::HttpOptions options;
  options.listen.port = first.port;
  api::HttpFront second(**opened, metrics, options);
  auto started = second.start();
  REQUIRE_FALSE(started.is_ok());
  CHECK(started.status().message().find(fmt::format("127.0.0.1:{}", first.port)) != std::string::npos);
  CHECK(started.status().message().find("in use") != std::string::npos);
  CHECK(first.client().Get("/healthz")->status == 200);
}

TEST_CASE("stop() right after start() returns (no accept loop left running)") {
  for (int i = 0; i < 20; ++i) {
    auto opened = Extender::open(ExtenderOptions{});
    REQUIRE(opened.is_ok());
    api::Metrics metrics;
    api::HttpFront front(**opened, metrics, api::HttpOptions{});
    REQUIRE(front.start().is_ok());
    front.stop();  // hung in join() when the loop had not started yet
  }
}

TEST_CASE("a keep-alive connection serves many requests (kube-scheduler does not reconnect every few pods)") {
  Server s;
  httplib::Client c = s.client();
  c.set_keep_alive(true);
  for (int i = 0; i < 20; ++i) {
    auto res = c.Get("/healthz");
    REQUIRE(res);
    CHECK(res->status == 200);
    // A server announces the end of a keep-alive connection with "Connection: close" (cpp-httplib did on the 5th request).
    CHECK_MESSAGE(res->get_header_value("Connection") != "close", "request ", i + 1);
  }
}

TEST_CASE("answers are gzipped only when the server is asked to (serve --http-gzip) and the caller accepts it") {
  for (bool gzip : {false, true}) {
    CAPTURE(gzip);
    Server s(gzip);
    REQUIRE(s.core->apply({nvf("a", 1, 81920).obj}, nullptr).is_ok());
    httplib::Client c = s.client();
    c.set_decompress(false);  // see the bytes as sent
    const std::string body = json{{"Pod", kube_pod("p")}, {"NodeNames", {"a", "ghost"}}}.dump();
    auto res = c.Post("/filter", {{"Accept-Encoding", "gzip"}}, body, "application/json");
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(res->get_header_value("Content-Encoding") == (gzip ? "gzip" : ""));
    if (!gzip) CHECK(json::parse(res->body)["NodeNames"] == json::array({"a"}));
    httplib::Client decoding = s.client();  // decompresses, as kube-scheduler's Go client does
    auto plain = decoding.Post("/filter", {{"Accept-Encoding", "gzip"}}, body, "application/json");
    REQUIRE(plain);
    CHECK(json::parse(plain->body)["NodeNames"] == json::array({"a"}));
  }
}

TEST_CASE("malformed input gets a 4xx and the server keeps serving") {
  Server s;
  auto c = s.client();
  auto truncated = c.Post("/filter", R"({"Pod": {"metadata": {"name": "x")", "application/json");
  REQUIRE(truncated);
  CHECK(truncated->status == 400);
  CHECK(s.post("/filter", {{"Pod", "not a pod"}, {"NodeNames", {"a"}}}, 400)["Error"] == "ExtenderArgs.Pod must be an object");
  CHECK(s.post("/filter", {{"Pod", json::object()}, {"NodeNames", "a"}}, 400)["Error"] == "ExtenderArgs.NodeNames must be a list of strings");
  CHECK(s.post("/bind", {{"PodName", 7}}, 400)["Error"] == "ExtenderBindingArgs.PodName must be a string");
  auto bad_bind = c.Post("/bind", R"({"PodName": "p",})", "application/json");
  REQUIRE(bad_bind);
  CHECK(json::parse(bad_bind->body)["Error"].get<std::string>().find("the body is not valid JSON: parse error at line 1, column 17") == 0);
  CHECK(s.post("/filter", json::array({1, 2}), 400)["Error"] == "the body must be a JSON object, not a array");
  // Filter's and Prioritize's bodies are read without a document (extender_args.cpp): every part
  // is still checked, the fields fracpack does not use and what follows the object included.
  const std::string pod_text = kube_pod("p").dump();
  for (const auto& [body, error] : std::vector<std::pair<std::string, std::string>>{
           {R"({"Pod":)" + pod_text + R"(,"NodeNames":["a"]} trailing)", "expected end of input"},
           {R"({"Pod":)" + pod_text + R"(,"NodeNames":["a"]} {"x":1})", "the body has content after its JSON object"},
           {R"({"Pod":)" + pod_text + R"(,"NodeNames":["a"]} 5)", "not valid JSON"},
           {R"({"Pod":)" + pod_text + R"(,"NodeNames":["a"],"Extra":[1,]})", "not valid JSON"},
           {R"({"Pod":)" + pod_text + R"(,"NodeNames":["a"],"Extra":tru})", "not valid JSON"},
           {R"({"Pod":)" + pod_text + R"(,"NodeNames":["a",7]})", "ExtenderArgs.NodeNames must be a list of strings"},
           {R"({"Pod":)" + pod_text + R"(,"NodeNames":["a\x"]})", "not valid JSON"},
           {R"({"Pod":)" + pod_text + "," + "\"NodeNames\":[\"\xff\"]}", "not valid JSON"},
           {R"({"Pod":)" + pod_text + R"(})", "ExtenderArgs has neither NodeNames nor Nodes"},
           {R"({"Pod":)" + pod_text + R"(,"Nodes":{"items":[{"metadata":{}}]}})", "ExtenderArgs.Nodes.items[0] needs metadata.name"},
           {R"({"Pod":)" + pod_text + R"(,"Nodes":[]})", "ExtenderArgs.Nodes must be a NodeList with items"},
           {R"({"Pod":)" + pod_text + R"(,"NodeNames":["a"],"Nodes":{"items":[]}})", "give NodeNames (nodeCacheCapable) or Nodes, not both"},
           {R"({"NodeNames":["a"]})", "ExtenderArgs.Pod must be an object"},
           {R"({"Pod":{"metadata":{"name":"x"},"spec":{"containers":[{"name":"c",}]}},"NodeNames":["a"]})", "not valid JSON"},
           // tests/fuzz/regressions/extender_args: a raw control character fails simdjson's first
           // stage; the message's second parse (nlohmann) then threw on the number, uncaught.
           {std::string("1e400{\"\0\"}", 10), "the body is not valid JSON: number overflow parsing '1e400'"},
           {"", "not valid JSON"}}) {
    for (const char* verb : {"/filter", "/prioritize"}) {
      auto res = c.Post(verb, body, "application/json");
      REQUIRE(res);
      CHECK_MESSAGE(res->status == 400, verb, " ", body.substr(0, 40), "…", body.substr(body.size() > 60 ? body.size() - 60 : 0));
      const json answer = json::parse(res->body, nullptr, false);
      CHECK_MESSAGE(answer.value("Error", "").find(error) != std::string::npos, answer.dump(), " wanted ", error);
    }
  }
  // Nesting deep enough to overflow the stack when copied: refused before parsing.
  json deep_pod = kube_pod("deep");
  std::string deep = deep_pod.dump();
  deep.insert(deep.size() - 1, R"(,"x":)" + std::string(150000, '[') + std::string(150000, ']'));
  auto nested = c.Post("/filter", R"({"Pod":)" + deep + R"(,"NodeNames":["a"]})", "application/json");
  REQUIRE(nested);
  CHECK(nested->status == 400);
  CHECK(json::parse(nested->body)["Error"] == "the body nests deeper than 128 levels; Kubernetes objects are far shallower");
  CHECK(s.post("/bind", {{"PodName", ""}, {"PodNamespace", "x"}, {"Node", "a"}}, 400)["Error"] == "ExtenderBindingArgs.PodName is empty");
  // A pod fracpack cannot read is the caller's error on every verb, Preempt included.
  CHECK(s.post("/preempt", {{"Pod", {{"metadata", 5}}}}, 400)["Error"].get<std::string>().find("metadata") != std::string::npos);
  auto huge = c.Post("/filter", std::string(10u << 20, '{'), "application/json");
  REQUIRE(huge);
  CHECK(huge->status == 413);
  CHECK(json::parse(huge->body)["Error"].get<std::string>().find("larger than --max-body") != std::string::npos);
  CHECK(json::parse(huge->body)["Error"].get<std::string>().find("set nodeCacheCapable: true") != std::string::npos);
  auto form = c.Post("/filter", std::string(9000, 'x'), "application/x-www-form-urlencoded");
  REQUIRE(form);
  CHECK(form->status == 400);  // read as what it is (not JSON), whatever its Content-Type says
  CHECK(json::parse(form->body)["Error"].get<std::string>().find("not valid JSON") != std::string::npos);
  // A chunked body is refused before it is read (http_server_test.cpp has the rest).
  std::size_t sent = 0;
  auto chunked = c.Post(
      "/filter",
      [&sent](std::size_t, httplib::DataSink& sink) {
        const std::string piece(64 << 10, ' ');
        if (sent < (256u << 20)) {
          sent += piece.size();
          return sink.write(piece.data(), piece.size());
        }
        sink.done();
        return true;
      },
      "application/json");
  if (chunked) {  // the server may close before the client is done sending
    CHECK(chunked->status == 411);
    CHECK(json::parse(chunked->body)["Error"].get<std::string>().find("Content-Length") != std::string::npos);
  }
  CHECK(sent < (256u << 20));  // not read to the end
  auto verb = c.Post("/schedule", "{}", "application/json");
  REQUIRE(verb);
  CHECK(verb->status == 404);
  CHECK(json::parse(verb->body)["Error"].get<std::string>().find("no such path: POST /schedule") == 0);
  auto garbage = c.Post("/prioritize", std::string("\x08\x96\x01\xff\x00garbage", 12), "application/x-protobuf");
  REQUIRE(garbage);
  CHECK(garbage->status == 400);
  auto health = c.Get("/healthz");
  REQUIRE(health);
  CHECK(health->status == 200);
  auto metrics = c.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("fracpack_requests_total{front=\"http\",verb=\"filter\",code=\"400\"}") != std::string::npos);
  CHECK(metrics->body.find("fracpack_request_duration_seconds_bucket{front=\"http\",verb=\"filter\",le=\"+Inf\"}") != std::string::npos);
  CHECK(metrics->body.find("fracpack_gpus{state=\"idle\"}") != std::string::npos);
}

}  // namespace
}  // namespace fracpack::test
