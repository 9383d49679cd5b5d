// The trace reader: the real files read whole, and every malformed input refused with the file,
// the line and the column named.
#include <doctest/doctest.h>

#include <fstream>

#include "fracpack/sim/alibaba.hpp"
#include "support/temp_files.hpp"
#include "support/trace_files.hpp"

namespace fracpack::test {
namespace {


const char* kPodHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";

TEST_CASE("trace: a node list and a pod list read into nodes and requests") {
  auto nodes = trace::read_nodes(temp_file("n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,T4\nn1,32000,131072,0,\n"));
  REQUIRE_MESSAGE(nodes.is_ok(), nodes.status().message());
  REQUIRE(nodes->size() == 2);
  NodeSpec spec = trace::to_node_spec((*nodes)[0]);
  CHECK(spec.gpus.size() == 2);
  CHECK(spec.gpus[1].memory == MiB(15109));
  CHECK(spec.labels.at("nvidia.com/gpu.product") == "T4");
  CHECK(spec.cpu == MilliCpu(64000));
  CHECK(spec.memory == to_bytes(MiB(262144)));
  CHECK(trace::to_node_spec((*nodes)[1]).gpus.empty());

  auto pods = trace::read_pods(temp_file("p.csv", std::string(kPodHeader) +
                                                        "a,6000,12288,1,460,,LS,Running,10,20,10\n"
                                                        "b,12000,24576,2,1000,V100M16|V100M32,BE,Running,0,,0\n"
                                                        "c,500,1024,0,0,,LS,Running,5,9,5\n"));
  REQUIRE_MESSAGE(pods.is_ok(), pods.status().message());
  REQUIRE(pods->size() == 3);
  PodRequest a = trace::to_pod_request((*pods)[0]);
  REQUIRE(a.fraction() != nullptr);
  CHECK(a.fraction()->portion == MilliGpu(460));
  CHECK((*pods)[0].deletion_time == 20);
  PodRequest b = trace::to_pod_request((*pods)[1]);
  REQUIRE(b.whole() != nullptr);
  CHECK(b.whole()->count == 2);
  REQUIRE(b.node_affinity.size() == 1);
  CHECK(b.node_affinity[0].match_expressions[0].values == std::vector<std::string>{"V100M16", "V100M32"});
  CHECK_FALSE((*pods)[1].deletion_time.has_value());
  CHECK((*pods)[1].gpu_total() == MilliGpu(2000));
  CHECK(trace::to_pod_request((*pods)[2]).cpu_only());
}

TEST_CASE("trace: malformed files are refused with file, line and column") {
  const std::string nodes_header = "sn,cpu_milli,memory_mib,gpu,model\n";
  struct Case {
    const char* what;
    bool pods;
    std::string text;
    const char* message;
  };
  const std::vector<Case> cases{
      {"missing column", false, "sn,cpu_milli,gpu,model\nn0,1,2,T4\n", "no column \"memory_mib\""},
      {"not a number", false, nodes_header + "n0,lots,1,1,T4\n", "line 2: cpu_milli \"lots\" is not an integer"},
      {"negative", false, nodes_header + "n0,-5,1,1,T4\n", "cpu_milli = -5 is outside"},
      {"unknown model", false, nodes_header + "n0,1,1,1,H100\n", "GPU model \"H100\""},
      {"duplicate node", false, nodes_header + "n0,1,1,1,T4\nn0,1,1,1,T4\n", "line 3: node n0 appears twice"},
      {"field count", false, nodes_header + "n0,1,1\n", "3 fields, the header has 5"},
      {"bad quoting", false, nodes_header + "\"n0,1,1,1,T4\n", "a quote that is not closed"},
      {"huge number", false, nodes_header + "n0,99999999999999999999999,1,1,T4\n", "cpu_milli = 99999999999999999999999 is outside"},
      {"duplicate pod", true, std::string(kPodHeader) + "a,1,1,0,0,,LS,R,0,1,0\na,1,1,0,0,,LS,R,0,1,0\n", "line 3: pod a appears twice"},
      {"share without GPU", true, std::string(kPodHeader) + "a,1,1,0,500,,LS,R,0,1,0\n", "gpu_milli 500 but num_gpu 0"},
      {"empty file", false, "", "empty file"},
      {"milli above 1000", true, std::string(kPodHeader) + "a,1,1,1,1500,,LS,R,0,1,0\n", "gpu_milli = 1500 is outside 0..1000"},
      {"fraction of two GPUs", true, std::string(kPodHeader) + "a,1,1,2,500,,LS,R,0,1,0\n", "a fraction (500 milli) of 2 GPUs"},
      {"GPU pod without share", true, std::string(kPodHeader) + "a,1,1,1,0,,LS,R,0,1,0\n", "1 GPU(s) with gpu_milli 0"},
      {"unknown spec model", true, std::string(kPodHeader) + "a,1,1,1,500,T4|X9,LS,R,0,1,0\n", "gpu_spec names \"X9\""},
      {"too many GPUs", true, std::string(kPodHeader) + "a,1,1,65,1000,,LS,R,0,1,0\n", "num_gpu = 65 is outside 0..64"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const auto path = temp_file("bad.csv", c.text);
    const Status st = c.pods ? trace::read_pods(path).status() : trace::read_nodes(path).status();
    CHECK(st.code() == Code::kInvalidArgument);
    CHECK_MESSAGE(st.message().find(c.message) != std::string::npos, st.message());
    CHECK(st.message().find(path.string()) != std::string::npos);
  }
  CHECK(trace::read_nodes("/nonexistent/nodes.csv").status().code() == Code::kNotFound);
  // A device or a directory is refused before reading (reading /dev/zero would never end).
  CHECK(trace::read_nodes("/dev/zero").status().message().find("not a regular file") != std::string::npos);
  CHECK(trace::read_nodes(std::filesystem::temp_directory_path()).status().message().find("not a regular file") != std::string::npos);
  // A UTF-8 byte order mark before the header is not part of the first column's name.
  auto bom = trace::read_nodes(temp_file("bom.csv", "\xEF\xBB\xBF" + nodes_header + "n0,1,1,1,T4\n"));
  CHECK_MESSAGE(bom.is_ok(), bom.status().message());
}

TEST_CASE("trace: the real Alibaba node and pod lists read whole") {
  auto dir = require_shared_data();
  if (!dir) return;
  auto nodes = trace::read_nodes(*dir / "alibaba-gpu-v2023" / "openb_node_list_gpu_node.csv");
  REQUIRE_MESSAGE(nodes.is_ok(), nodes.status().message());
  CHECK(nodes->size() == 1213);
  int gpus = 0;
  for (const auto& n : *nodes) gpus += n.gpus;
  CHECK(gpus == 6212);
  auto pods = trace::read_pods(*dir / "alibaba-gpu-v2023" / "openb_pod_list_default.csv");
  REQUIRE_MESSAGE(pods.is_ok(), pods.status().message());
  CHECK(pods->size() == 8152);
  auto multi = trace::read_pods(*dir / "alibaba-gpu-v2023" / "openb_pod_list_multigpu50.csv");  // five columns only
  REQUIRE_MESSAGE(multi.is_ok(), multi.status().message());
  CHECK(multi->size() == 9061);
}

}  // namespace
}  // namespace fracpack::test
