#include "plugin_api/http_front.hpp"

#include <atomic>
#include <chrono>
#include <iterator>
#include <map>
#include <optional>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "fracpack/k8s/object_stream.hpp"
#include "plugin_api/bind_path.hpp"
#include "plugin_api/decision_log.hpp"
#include "plugin_api/extender_args.hpp"
#include "plugin_api/json_text.hpp"
#include "plugin_api/node_learning.hpp"

namespace fracpack::api {
namespace {

using nlohmann::json;

/// A request that is not the verb's ExtenderArgs: 400 with the reason.
struct BadRequest {
  std::string message;
};

json parse_body(const std::string& text) {
  if (k8s::too_deep_json(text)) throw BadRequest{std::string("the body ") + k8s::kTooDeep};
  json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) throw BadRequest{"the body is not valid JSON: " + json_syntax_error(text)};
  if (!body.is_object()) throw BadRequest{fmt::format("the body must be a JSON object, not a {}", body.type_name())};
  return body;
}

const json& required_object(const json& body, const char* field, const char* type) {
  auto it = body.find(field);
  if (it == body.end() || !it->is_object()) throw BadRequest{fmt::format("{}.{} must be an object", type, field)};
  return *it;
}

std::string string_field(const json& body, const char* field, const char* type, bool required = true) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) {
    if (required) throw BadRequest{fmt::format("{}.{} is missing", type, field)};
    return "";
  }
  if (!it->is_string()) throw BadRequest{fmt::format("{}.{} must be a string", type, field)};
  return it->get<std::string>();
}

std::string to_text(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
std::string to_text(std::string text) { return text; }
/// An answer carrying only kube-scheduler's Error field.
std::string error_text(const std::string& why) { return to_text(json{{"Error", why}}); }

/// Appends node → reason pairs as a JSON object (the core answers each node once). Thousands of
/// nodes share a handful of reasons: each reason is escaped once per run of nodes sharing it.
void append_reasons(std::string& out, const NodeReasons& m) {
  out += '{';
  const std::string* last = nullptr;
  std::string escaped;
  for (std::size_t k = 0; k < m.size(); ++k) {
    if (k > 0) out += ',';
    append_json_string(out, m[k].first);
    out += ':';
    const std::string& why = m[k].second.str();
    if (&why != last) {
      escaped.clear();
      append_json_string(escaped, why);
      last = &why;
    }
    out += escaped;
  }
  out += '}';
}

/// About the bytes of `answer` as JSON, reserved up front (answers run to hundreds of KB).
std::size_t answer_size(const FilterAnswer& answer) {
  std::size_t bytes = 64;
  for (const NodeReasons* m : {&answer.failed, &answer.unresolvable}) {
    if (!m->empty()) bytes += m->size() * (m->front().first.size() + m->front().second.str().size() + 8);
  }
  if (!answer.passed.empty()) bytes += answer.passed.size() * (answer.passed.front().size() + 4);
  return bytes;
}

/// The reader of Filter's and Prioritize's bodies, one per serving thread (it keeps its buffers).
ExtenderArgsReader& args_reader() {
  thread_local ExtenderArgsReader reader;
  return reader;
}

}  // namespace

struct HttpFront::Impl {
  Extender& core;
  Metrics& metrics;
  HttpOptions options;
  KubeBinder* binder;
  HttpServer server;

  static constexpr const char* kJson = "application/json; charset=utf-8";

  Impl(Extender& c, Metrics& m, HttpOptions o, KubeBinder* b)
      : core(c), metrics(m), options(std::move(o)), binder(b), server(options.listen) {}

  std::atomic<std::int64_t> node_list_warned{0};  ///< steady-clock seconds of the last warning

  /// Following the API server, a NodeList in every Filter is kube-scheduler encoding (and fracpack
  /// parsing) every candidate's Node for nothing: said every ten minutes.
  void warn_node_list(const ExtenderArgsReader& args) {
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
    std::int64_t last = node_list_warned.load();
    if ((last != 0 && now - last < 600) || !node_list_warned.compare_exchange_strong(last, now)) return;
    spdlog::warn("kube-scheduler sends every candidate's Node object with each Filter ({} nodes): nodeCacheCapable is false in "
                 "its extender config. fracpack follows the API server and does not read them; set nodeCacheCapable: true (at "
                 "5,000 nodes this configuration cuts kube-scheduler's pods/s ~7x, docs/benchmarks.md)",
                 args.node_names().size());
  }

  std::map<std::string, std::string> learn(const ExtenderArgsReader& args) {
    if (!args.cache_capable() && core.follows_api_server()) warn_node_list(args);
    // Following the API server, the watch has the Nodes: the ones sent are not even read.
    if (args.cache_capable() || core.follows_api_server()) return {};
    return learn_nodes(core, args.node_names(), args.node_objects());
  }

  std::string filter(const ExtenderArgsReader& args) {
    const json& pod = args.pod();
    const auto& names = args.node_names();
    const Timer timer;
    const auto rejected = learn(args);
    auto answer = core.filter(pod, names);
    if (answer) with_rejections(*answer, rejected);
    if (answer) metrics.unschedulable(answer->refused_by);
    log_filter(pod, answer, names.size(), timer.seconds());
    if (!answer) {
      // A pod fracpack cannot read fits nowhere until it is fixed: say so on every node.
      FilterAnswer all_unresolvable;
      const SharedReason why(answer.status().message());
      for (const auto& n : names) all_unresolvable.unresolvable.emplace_back(n, why);
      answer = std::move(all_unresolvable);
    }
    std::string out = "{";
    out.reserve(answer_size(*answer));
    if (args.cache_capable()) {
      out += "\"NodeNames\":";
      append_json_strings(out, answer->passed);
    } else {
      const std::unordered_set<std::string_view> passed(answer->passed.begin(), answer->passed.end());  // not a scan per node
      out += R"("Nodes":{"apiVersion":"v1","kind":"NodeList","metadata":{},"items":[)";
      bool first = true;
      for (std::size_t i = 0; i < names.size(); ++i) {
        if (passed.count(names[i]) == 0) continue;
        if (!std::exchange(first, false)) out += ',';
        out += args.node_text(i);  // the Node as sent, compacted
      }
      out += "]}";
    }
    if (options.unresolvable_as_failed) {
      answer->failed.insert(answer->failed.end(), answer->unresolvable.begin(), answer->unresolvable.end());
      answer->unresolvable.clear();
    }
    out += ",\"FailedNodes\":";
    append_reasons(out, answer->failed);
    out += ",\"FailedAndUnresolvableNodes\":";
    append_reasons(out, answer->unresolvable);
    out += ",\"Error\":\"\"}";
    return out;
  }

  std::string prioritize(const ExtenderArgsReader& args) {
    const json& pod = args.pod();
    const auto& names = args.node_names();
    learn(args);
    std::string out = "[";
    auto host = [&](std::string_view name, std::int64_t score) {  // kube-scheduler's HostPriority
      if (out.size() > 1) out += ',';
      out += "{\"Host\":";
      append_json_string(out, name);
      fmt::format_to(std::back_inserter(out), ",\"Score\":{}}}", score);  // no string per node
    };
    if (auto scores = core.prioritize(pod, names)) {
      for (const auto& s : *scores) host(s.host, s.score);
    } else {  // a pod fracpack cannot read: Filter already said why; every node scores 0
      for (const auto& n : names) host(n, 0);
    }
    return out + "]";
  }

  struct BindArgs {
    std::string ns, name, uid, node;
  };
  static BindArgs bind_args(const json& args) {
    BindArgs b;  // read in this order: the first bad field is the one an answer names
    b.name = string_field(args, "PodName", "ExtenderBindingArgs");
    b.ns = string_field(args, "PodNamespace", "ExtenderBindingArgs");
    b.uid = string_field(args, "PodUID", "ExtenderBindingArgs", false);
    b.node = string_field(args, "Node", "ExtenderBindingArgs");
    if (b.name.empty()) throw BadRequest{"ExtenderBindingArgs.PodName is empty"};
    if (b.node.empty()) throw BadRequest{"ExtenderBindingArgs.Node is empty"};
    return b;
  }
  static json bind_result(const Result<BindAnswer>& bound) { return {{"Error", bound ? "" : bound.status().message()}}; }

  json bind(const json& args) {
    const BindArgs b = bind_args(args);
    const Timer timer;
    auto bound = bind_pod(core, binder, metrics, b.ns, b.name, b.uid, b.node);
    log_bind(b.ns + "/" + b.name, b.node, bound, timer.seconds());
    return bind_result(bound);
  }

  /// Bind following the API server: answered when the Binding is made, which may wait seconds for
  /// a new GPU's reservation pod; meanwhile it holds kube-scheduler's connection, not a thread.
  void route_bind_async() {
    protected_paths.emplace("/bind", std::pair{Permission::kSchedule, "bind"});
    server.route_async("POST", "/bind", [this](const HttpRequest& req, HttpResponder respond) {
      auto timer = std::make_shared<Timer>();
      auto answered = std::make_shared<std::atomic<bool>>(false);
      auto answer = [this, timer, answered, respond](HttpResponse res) {  // once, whatever happens below
        if (answered->exchange(true)) return;
        metrics.observe("http", "bind", std::to_string(res.status), timer->seconds());
        respond(std::move(res));
      };
      auto json_answer = [answer](int status, std::string body) {
        HttpResponse res;
        res.content_type = kJson;
        res.status = status;
        res.body = std::move(body);
        answer(std::move(res));
      };
      try {
        if (HttpResponse refused; !allowed(req, refused, Permission::kSchedule, "bind")) return answer(std::move(refused));
        BindArgs b;
        try {
          b = bind_args(parse_body(req.body));
        } catch (const BadRequest& e) {
          return json_answer(400, error_text(e.message));
        } catch (const std::exception& e) {  // a value of the wrong type deep inside: still the caller's input
          return json_answer(400, error_text(fmt::format("malformed bind arguments: {}", e.what())));
        }
        bind_pod_async(core, binder, metrics, b.ns, b.name, b.uid, b.node, [timer, b, json_answer](Result<BindAnswer> bound) {
          log_bind(b.ns + "/" + b.name, b.node, bound, timer->seconds());
          json_answer(200, to_text(bind_result(bound)));
        });
      } catch (const std::exception& e) {  // ours, not the caller's: answered, never std::terminate on a worker
        spdlog::error("bind: {}", e.what());
        json_answer(500, error_text(fmt::format("internal error: {}", e.what())));
      }
    });
  }

  json preempt(const json& args) {
    const json& pod = required_object(args, "Pod", "ExtenderPreemptionArgs");
    std::map<std::string, std::vector<std::string>> offered;
    auto read = [&](const char* field, bool meta) {
      auto it = args.find(field);
      if (it == args.end() || it->is_null()) return;
      if (!it->is_object()) throw BadRequest{fmt::format("ExtenderPreemptionArgs.{} must be a map", field)};
      for (const auto& [node, victims] : it->items()) {
        auto& uids = offered[node];
        const std::string where = fmt::format("ExtenderPreemptionArgs.{}.{}", field, node);
        if (victims.is_null()) continue;
        if (!victims.is_object()) throw BadRequest{fmt::format("{} must be an object with Pods", where)};
        const auto pods = victims.find("Pods");
        if (pods == victims.end() || pods->is_null()) continue;
        if (!pods->is_array()) throw BadRequest{fmt::format("{}.Pods must be a list", where)};
        for (std::size_t i = 0; i < pods->size(); ++i) {
          // MetaVictims name pods by UID; Victims carry whole v1 Pods (metadata.uid).
          const json& p = (*pods)[i];
          const json* uid = nullptr;
          if (p.is_object() && meta && p.contains("UID")) uid = &p["UID"];
          if (p.is_object() && !meta && p.contains("metadata") && p["metadata"].is_object() && p["metadata"].contains("uid")) {
            uid = &p["metadata"]["uid"];
          }
          if (uid == nullptr || !uid->is_string() || uid->get_ref<const std::string&>().empty()) {
            throw BadRequest{fmt::format("{}.Pods[{}] needs {} (a string)", where, i, meta ? "UID" : "metadata.uid")};
          }
          uids.push_back(uid->get<std::string>());
        }
      }
    };
    read("NodeNameToVictims", false);
    read("NodeNameToMetaVictims", true);
    json out{{"NodeNameToMetaVictims", json::object()}};
    auto answer = core.preempt(pod, offered);
    if (!answer && answer.status().code() == Code::kInvalidArgument) throw BadRequest{answer.status().message()};
    if (!answer) return out;
    for (const auto& [node, uids] : *answer) {
      json pods = json::array();
      for (const auto& u : uids) pods.push_back({{"UID", u}});
      out["NodeNameToMetaVictims"][node] = {{"Pods", pods}, {"NumPDBViolations", 0}};
    }
    return out;
  }

  /// fracpack's own verb: why a pod fits no node, with each node's numbers (Filter's FailedNodes
  /// carry only the shared categories, for kube-scheduler's counts).
  json explain(const json& args) {
    const json& pod = required_object(args, "Pod", "ExplainArgs");
    auto e = core.explain(pod);
    if (!e) throw BadRequest{e.status().message()};
    json nodes = json::object();
    for (const auto& [name, verdict] : e->nodes) nodes[name] = verdict.fits() ? "fits" : verdict.text();
    json out{{"Status", std::string(code_name(e->code))}, {"Reason", e->summary}, {"Nodes", nodes}, {"NodesOmitted", e->nodes_omitted}};
    if (!e->consolidation_node.empty()) {
      json moves = json::array();
      for (const auto& m : e->consolidation_moves) moves.push_back({{"Pod", m.pod}, {"From", m.from}, {"To", m.to}});
      out["Consolidation"] = {{"Node", e->consolidation_node}, {"Moves", moves}};
    }
    return out;
  }

  /// Whether the caller may `what`; if not, `res` is its 401 or 403 and the refusal is logged.
  bool allowed(const HttpRequest& req, HttpResponse& res, Permission what, const char* verb) const {
    if (!options.access) return true;
    const AccessDecision d = options.access->check(req.peer_name, req.header("Authorization"), what, verb);
    if (d.allowed()) return true;
    const bool unknown = d.outcome == AccessDecision::Outcome::kUnauthenticated;
    res.status = unknown ? 401 : 403;
    res.content_type = kJson;
    res.body = error_text(d.message);
    if (unknown) res.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"fracpack\"");
    spdlog::warn("{} from {}: refused: {}", verb, req.remote, d.message);
    return false;
  }

  /// Answers `handler(req.body)` as JSON, a BadRequest (or a wrong type deep inside) as 400.
  template <class Handler>
  void serve(const char* path, const char* verb, Handler handler, Permission what) {
    // On the reading threads: each is a ledger read or write. A Bind that creates the Binding in
    // the API server is route_bind_async's.
    protected_paths.emplace(path, std::pair{what, verb});
    server.route("POST", path, [this, verb, handler, what](const HttpRequest& req, HttpResponse& res) {
      Timer timer;
      res.content_type = kJson;
      if (!allowed(req, res, what, verb)) return metrics.observe("http", verb, std::to_string(res.status), timer.seconds());
      try {
        res.body = to_text(handler(req.body));
        res.status = 200;
      } catch (const BadRequest& e) {
        res.status = 400;
        res.body = error_text(e.message);
      } catch (const std::exception& e) {  // a value of the wrong type deep inside: still the caller's input
        res.status = 400;
        res.body = error_text(fmt::format("malformed {} arguments: {}", verb, e.what()));
      }
      metrics.observe("http", verb, std::to_string(res.status), timer.seconds());
    });
  }

  /// GET `path`; `what` unset: open to everyone.
  void get(const char* path, std::function<void(HttpResponse&)> answer, std::optional<Permission> what = std::nullopt,
           bool may_wait = false) {
    if (what) protected_paths.emplace(path, std::pair{*what, path});
    server.route("GET", path, [this, path, answer = std::move(answer), what](const HttpRequest& req, HttpResponse& res) {
      if (!what || allowed(req, res, *what, path)) answer(res);
    }, may_wait);
  }

  /// GET /healthz, /readyz (503 until the first list of everything is applied) and /metrics.
  void probes() {
    get("/healthz", [](HttpResponse& res) { res.body = "ok\n"; });
    get("/readyz", [this](HttpResponse& res) {
      const bool ready = core.synced();
      res.status = ready ? 200 : 503;
      res.body = ready ? "ok\n" : "syncing with the API server\n";
    });
    get("/metrics", [this](HttpResponse& res) {
      res.content_type = "text/plain; version=0.0.4";
      res.body = metrics.render(core.gauges());
    }, options.probes_only ? std::nullopt : std::optional(Permission::kRead));
  }

  /// Who may call each path; checked on the header, before the body is read (and again by the
  /// handler, which answers the same).
  std::map<std::string, std::pair<Permission, const char*>, std::less<>> protected_paths;

  void admission() {
    server.admission([this](const HttpRequest& head) -> std::optional<HttpResponse> {
      const auto it = protected_paths.find(head.path);
      if (it == protected_paths.end()) return std::nullopt;
      HttpResponse res;
      if (allowed(head, res, it->second.first, it->second.second)) return std::nullopt;
      return res;
    });
  }

  /// The server's own refusals (413, 431, 415, unsafe framing) and unknown paths, with Error:
  /// kube-scheduler shows an extender's Error in the pod's events.
  void refusals() {
    server.refusals([](int status, const std::string& path, const std::string& why) {
      HttpResponse res;
      res.status = status;
      res.content_type = kJson;
      const bool node_list = status == 413 && (path == "/filter" || path == "/prioritize");
      res.body = error_text(node_list ? why + " (a Filter carrying every Node: set nodeCacheCapable: true in kube-scheduler's extender config)" : why);
      return res;
    });
    server.fallback([](const HttpRequest& req, HttpResponse& res) {
      res.status = 404;
      res.content_type = kJson;
      res.body = error_text(fmt::format("no such path: {:.16} {:.64} (POST /filter, /prioritize, /bind, /preempt, /explain; GET /healthz, "
                                        "/readyz, /metrics, /snapshot, /debug/verify)", req.method, req.path));
    });
  }

  /// A verb whose body is a small JSON document.
  template <class Handler>
  void route(const char* path, const char* verb, Handler handler, Permission what = Permission::kSchedule) {
    serve(path, verb, [this, handler](const std::string& body) { return (this->*handler)(parse_body(body)); }, what);
  }

  /// Filter and Prioritize: an ExtenderArgs with thousands of node names.
  template <class Handler>
  void route_args(const char* path, const char* verb, Handler handler) {
    serve(path, verb, [this, handler](const std::string& body) {
      ExtenderArgsReader& args = args_reader();
      struct Trim {  // after the answer, whatever happened
        ExtenderArgsReader& r;
        ~Trim() { r.trim(); }
      } trim{args};
      if (Status st = args.read(body); !st.is_ok()) throw BadRequest{st.message()};
      return (this->*handler)(args);
    }, Permission::kSchedule);
  }
};

HttpFront::HttpFront(Extender& core, Metrics& metrics, HttpOptions options, KubeBinder* binder)
    : impl_(std::make_unique<Impl>(core, metrics, std::move(options), binder)) {
  Impl& i = *impl_;
  i.refusals();
  i.probes();
  if (i.options.access) i.admission();
  if (i.options.probes_only) return;
  i.metrics.add_source([&i] {  // the extender listener's connections: kube-scheduler's, mostly
    return fmt::format("# HELP fracpack_http_connections Connections open on the extender's HTTP listener.\n"
                       "# TYPE fracpack_http_connections gauge\nfracpack_http_connections {}\n"
                       "# HELP fracpack_http_connections_refused_total Connections closed at accept because --http-max-connections or "
                       "--http-max-connections-per-client was reached (the client sees EOF).\n"
                       "# TYPE fracpack_http_connections_refused_total counter\nfracpack_http_connections_refused_total {}\n",
                       i.server.connections(), i.server.refused());
  });
  i.route_args("/filter", "filter", &Impl::filter);
  i.route_args("/prioritize", "prioritize", &Impl::prioritize);
  if (binder != nullptr) {
    i.route_bind_async();
  } else {
    i.route("/bind", "bind", &Impl::bind);
  }
  i.route("/preempt", "preempt", &Impl::preempt);
  i.route("/explain", "explain", &Impl::explain, Permission::kRead);
  i.get("/debug/verify", [&i](HttpResponse& res) {
    const std::string differs = i.core.verify();
    if (!differs.empty()) {
      res.status = 500;
      res.body = "the ledger differs from one rebuilt from scratch: " + differs + "\n";
      return;
    }
    const std::vector<std::string> api = i.options.verify_api ? i.options.verify_api() : std::vector<std::string>{};
    res.status = api.empty() ? 200 : 500;
    res.body = !i.options.verify_api ? "ok: the ledger equals one rebuilt from scratch\n"
               : api.empty()        ? "ok: the ledger equals one rebuilt from scratch, and the API server's pods\n"
                                    : fmt::format("the ledger differs from the API server's pods:\n{}\n", fmt::join(api, "\n"));
  }, Permission::kRead, /*may_wait=*/true);
  i.get("/snapshot", [&i](HttpResponse& res) {
    res.content_type = Impl::kJson;
    res.body = to_text(to_json(i.core.snapshot()));
  }, Permission::kRead);
}

HttpFront::~HttpFront() { stop(); }

Result<int> HttpFront::start() { return impl_->server.start(); }

void HttpFront::stop() {
  if (impl_) impl_->server.stop();
}

}  // namespace fracpack::api
