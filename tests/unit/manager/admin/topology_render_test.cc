// kdpctl topology's renderings (manager/src/admin/topology_render.h) on hand-built topologies:
// the tree compared line for line (box-drawing and ASCII), the SVG checked for well-formedness by
// a small XML checker, for hostile labels (escaped, never raw), colours and layout, and the JSON.
#include "manager/src/admin/topology_render.h"

#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/admin/v1/admin.pb.h"

namespace kdp::manager {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

namespace admin = ::kdp::admin::v1;

admin::TopologyDevice* AddDevice(admin::TopologyResource* resource, const std::string& id,
                                 const std::string& health, std::vector<int64_t> numa,
                                 std::vector<std::string> holders = {}) {
  admin::TopologyDevice* device = resource->add_devices();
  device->set_id(id);
  device->set_health(health);
  for (int64_t node : numa) device->add_numa(node);
  for (const std::string& holder : holders) device->add_holders(holder);
  return device;
}

// Two NUMA nodes (node 1 CPU-less), GPUs on node 0 (one on both nodes), a NIC without NUMA
// affinity, a DRA driver's device on node 1, 5 GPUs not listed.
admin::NodeTopology Sample() {
  admin::NodeTopology topology;
  topology.set_node_name("node-a");
  admin::TopologyNumaNode* zero = topology.add_numa_nodes();
  zero->set_id(0);
  for (int64_t cpu : {0, 1, 2, 3, 8, 9, 10, 11, 15}) zero->add_cpus(cpu);
  topology.add_numa_nodes()->set_id(1);
  admin::TopologyResource* gpu = topology.add_resources();
  gpu->set_name("example.com/gpu");
  gpu->set_kind("device-plugin");
  AddDevice(gpu, "gpu10", "Healthy", {0});
  AddDevice(gpu, "gpu2", "Unhealthy", {0}, {"default/trainer/main"});
  AddDevice(gpu, "gpu3", "Healthy", {1, 0});
  gpu->set_devices_omitted(5);
  admin::TopologyResource* nic = topology.add_resources();
  nic->set_name("example.com/nic");
  nic->set_kind("device-plugin");
  AddDevice(nic, "nic0", "Healthy", {}, {"ml/a/x", "ml/b/y"});
  admin::TopologyResource* dra = topology.add_resources();
  dra->set_name("gpu.example.com");
  dra->set_kind("dra");
  AddDevice(dra, "node-a/gpu0", "Unknown", {1});
  return topology;
}

TEST(CompactRanges, JoinsRunsAndSortsAndDropsDuplicates) {
  EXPECT_EQ(CompactRanges({}), "");
  EXPECT_EQ(CompactRanges({4}), "4");
  EXPECT_EQ(CompactRanges({0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23}), "0-7,16-23");
  EXPECT_EQ(CompactRanges({9, 3, 1, 2, 2, 10, 5}), "1-3,5,9-10");
}

TEST(TopologyTree, DrawsNumaNodesResourcesAndDevicesInStableOrder) {
  EXPECT_EQ(TopologyTree(Sample()),
            "node node-a\n"
            "├── NUMA node 0: CPUs 0-3,8-11,15\n"
            "│   └── example.com/gpu\n"
            "│       ├── gpu2             Unhealthy  default/trainer/main\n"
            "│       ├── gpu3 (NUMA 0,1)  Healthy    free\n"
            "│       └── gpu10            Healthy    free\n"
            "├── NUMA node 1: no CPUs\n"
            "│   └── gpu.example.com (DRA)\n"
            "│       └── node-a/gpu0  Unknown  free\n"
            "├── no NUMA affinity\n"
            "│   └── example.com/nic\n"
            "│       └── nic0  Healthy  ml/a/x, ml/b/y\n"
            "└── example.com/gpu: 5 more devices not listed\n");
}

TEST(TopologyTree, AsciiFallbackUsesNoMultibyteCharacters) {
  const std::string tree = TopologyTree(Sample(), {.ascii = true});
  EXPECT_THAT(tree, HasSubstr("|-- NUMA node 0: CPUs 0-3,8-11,15\n"
                              "|   `-- example.com/gpu\n"
                              "|       |-- gpu2 "));
  EXPECT_THAT(tree, HasSubstr("`-- example.com/gpu: 5 more devices not listed\n"));
  for (char c : tree) {
    EXPECT_LT(static_cast<unsigned char>(c), 0x80) << tree;
  }
}

TEST(TopologyTree, NodesNamedOnlyByDevicesAndEmptyTopologies) {
  admin::NodeTopology topology;
  admin::TopologyResource* gpu = topology.add_resources();
  gpu->set_name("r");
  AddDevice(gpu, "d", "Healthy", {3});
  EXPECT_EQ(TopologyTree(topology),
            "node (unnamed)\n"
            "└── NUMA node 3: CPUs unknown\n"
            "    └── r\n"
            "        └── d  Healthy  free\n");
  EXPECT_EQ(TopologyTree(admin::NodeTopology()),
            "node (unnamed)\n└── no NUMA nodes or devices known\n");
}

TEST(TopologyTree, ControlCharactersFromPeersCannotReachTheTerminal) {
  admin::NodeTopology topology;
  admin::TopologyResource* gpu = topology.add_resources();
  gpu->set_name("r\x1b]0;x\x07");
  AddDevice(gpu, "gpu\x1b[2J", "Healthy", {}, {"ns/p\r/c\n"});
  const std::string tree = TopologyTree(topology);
  EXPECT_THAT(tree, HasSubstr("r?]0;x?\n"));
  EXPECT_THAT(tree, HasSubstr("gpu?[2J  Healthy  ns/p?/c?\n"));
  EXPECT_THAT(tree, Not(HasSubstr("\x1b")));
}

// A minimal XML 1.0 well-formedness check (no DTDs): one root element, balanced tags, quoted
// attributes without '<', unique attribute names, '&' only in the five entities or character
// references, comments and processing instructions closed. Returns "" or the first problem.
std::string XmlProblem(const std::string& xml) {
  std::vector<std::string> open;
  int roots = 0;
  auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' ||
           c == '.' || static_cast<unsigned char>(c) >= 0x80;
  };
  auto check_text = [](const std::string& text) -> std::string {
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '<') return "raw < in text or attribute";
      if (static_cast<unsigned char>(text[i]) < 0x20 && text[i] != '\n' && text[i] != '\t' &&
          text[i] != '\r') {
        return "control character";
      }
      if (text[i] != '&') continue;
      const size_t end = text.find(';', i);
      if (end == std::string::npos) return "unterminated entity";
      const std::string entity = text.substr(i + 1, end - i - 1);
      if (entity != "amp" && entity != "lt" && entity != "gt" && entity != "quot" &&
          entity != "apos" && !(entity.size() > 1 && entity[0] == '#')) {
        return "unknown entity &" + entity + ";";
      }
    }
    return "";
  };
  size_t i = 0;
  while (i < xml.size()) {
    if (xml[i] != '<') {
      const size_t next = xml.find('<', i);
      const std::string text =
          xml.substr(i, next == std::string::npos ? std::string::npos : next - i);
      if (open.empty() && text.find_first_not_of(" \t\r\n") != std::string::npos) {
        return "text outside the root";
      }
      if (std::string problem = check_text(text); !problem.empty()) return problem;
      if (next == std::string::npos) break;
      i = next;
      continue;
    }
    if (xml.compare(i, 4, "<!--") == 0) {
      const size_t end = xml.find("-->", i + 4);
      if (end == std::string::npos) return "unterminated comment";
      i = end + 3;
      continue;
    }
    if (xml.compare(i, 2, "<?") == 0) {
      const size_t end = xml.find("?>", i + 2);
      if (end == std::string::npos) return "unterminated processing instruction";
      i = end + 2;
      continue;
    }
    const bool closing = xml.compare(i, 2, "</") == 0;
    size_t j = i + (closing ? 2 : 1);
    const size_t name_start = j;
    while (j < xml.size() && name_char(xml[j])) ++j;
    const std::string name = xml.substr(name_start, j - name_start);
    if (name.empty()) return "element without a name";
    if (closing) {
      while (j < xml.size() && std::isspace(static_cast<unsigned char>(xml[j]))) ++j;
      if (j >= xml.size() || xml[j] != '>') return "bad end tag </" + name;
      if (open.empty() || open.back() != name) return "mismatched </" + name + ">";
      open.pop_back();
      i = j + 1;
      continue;
    }
    std::vector<std::string> attributes;
    while (true) {
      const size_t before = j;
      while (j < xml.size() && std::isspace(static_cast<unsigned char>(xml[j]))) ++j;
      if (j >= xml.size()) return "unterminated tag <" + name;
      if (xml[j] == '>' || xml.compare(j, 2, "/>") == 0) break;
      if (j == before) return "no space before an attribute of <" + name;
      const size_t attribute_start = j;
      while (j < xml.size() && name_char(xml[j])) ++j;
      const std::string attribute = xml.substr(attribute_start, j - attribute_start);
      if (attribute.empty() || j + 1 >= xml.size() || xml[j] != '=' ||
          (xml[j + 1] != '"' && xml[j + 1] != '\'')) {
        return "bad attribute in <" + name;
      }
      for (const std::string& seen : attributes) {
        if (seen == attribute) return "duplicate attribute " + attribute;
      }
      attributes.push_back(attribute);
      const char quote = xml[j + 1];
      const size_t end = xml.find(quote, j + 2);
      if (end == std::string::npos) return "unterminated attribute " + attribute;
      if (std::string problem = check_text(xml.substr(j + 2, end - j - 2)); !problem.empty()) {
        return problem + " (attribute " + attribute + ")";
      }
      j = end + 1;
    }
    if (open.empty() && ++roots > 1) return "more than one root element";
    if (xml[j] == '/') {
      i = j + 2;
    } else {
      open.push_back(name);
      i = j + 1;
    }
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  if (roots != 1) return "no root element";
  return "";
}

TEST(XmlProblem, TheCheckerRejectsWhatIsNotWellFormed) {
  EXPECT_EQ(XmlProblem("<a x=\"1\"><b/>t &amp; u</a>"), "");
  EXPECT_NE(XmlProblem("<a><b></a>"), "");
  EXPECT_NE(XmlProblem("<a>x < y</a>"), "");
  EXPECT_NE(XmlProblem("<a>x & y</a>"), "");
  EXPECT_NE(XmlProblem("<a x=\"<\"/>"), "");
  EXPECT_NE(XmlProblem("<a x=\"1\" x=\"2\"/>"), "");
  EXPECT_NE(XmlProblem("<a/><b/>"), "");
  EXPECT_NE(XmlProblem("<a x=1/>"), "");
}

// The value of `attribute` in the first element that contains `marker`.
std::string AttributeNear(const std::string& svg, const std::string& marker,
                          const std::string& attribute) {
  const size_t at = svg.find(marker);
  if (at == std::string::npos) return "";
  const size_t start = svg.rfind('<', at);
  const size_t end = svg.find('>', at);
  const std::string element = svg.substr(start, end - start);
  const std::string key = " " + attribute + "=\"";
  const size_t value = element.find(key);
  if (value == std::string::npos) return "";
  const size_t value_end = element.find('"', value + key.size());
  return element.substr(value + key.size(), value_end - value - key.size());
}

int IntAttribute(const std::string& svg, const std::string& marker, const std::string& attribute) {
  int out = -1;
  EXPECT_TRUE(absl::SimpleAtoi(AttributeNear(svg, marker, attribute), &out))
      << marker << " " << attribute;
  return out;
}

TEST(TopologySvg, IsWellFormedAndSizedToItsContent) {
  const std::string svg = TopologySvg(Sample());
  EXPECT_EQ(XmlProblem(svg), "") << svg;
  const int width = IntAttribute(svg, "<svg ", "width");
  const int height = IntAttribute(svg, "<svg ", "height");
  EXPECT_EQ(AttributeNear(svg, "<svg ", "viewBox"), absl::StrCat("0 0 ", width, " ", height));
  // Three boxes side by side (two NUMA nodes, no affinity): wider than two, narrower than a page.
  EXPECT_GT(width, 3 * 200);
  EXPECT_LT(width, 1600);
  EXPECT_GT(height, 200);
  // Every device box lies inside the picture.
  for (const std::string id : {"gpu2", "gpu3", "gpu10", "nic0", "node-a/gpu0"}) {
    const std::string marker = absl::StrCat("data-device=\"", id, "\"");
    ASSERT_THAT(svg, HasSubstr(marker));
    EXPECT_GE(IntAttribute(svg, marker, "x"), 0);
    EXPECT_LE(IntAttribute(svg, marker, "x") + IntAttribute(svg, marker, "width"), width);
    EXPECT_LE(IntAttribute(svg, marker, "y") + IntAttribute(svg, marker, "height"), height);
  }
  // An empty topology is a valid picture too.
  EXPECT_EQ(XmlProblem(TopologySvg(admin::NodeTopology())), "");
}

TEST(TopologySvg, ColoursDevicesByHealthLabelsHoldersAndHasALegend) {
  const std::string svg = TopologySvg(Sample());
  EXPECT_EQ(AttributeNear(svg, "data-device=\"gpu2\"", "fill"), kSvgUnhealthyFill);
  EXPECT_EQ(AttributeNear(svg, "data-device=\"gpu10\"", "fill"), kSvgHealthyFill);
  EXPECT_EQ(AttributeNear(svg, "data-device=\"node-a/gpu0\"", "fill"), kSvgUnknownFill);
  EXPECT_EQ(AttributeNear(svg, "data-device=\"gpu2\"", "data-resource"), "example.com/gpu");
  // The holder is the label right after the device's ID.
  const size_t gpu2 = svg.find("data-device=\"gpu2\"");
  const size_t id_end = svg.find("</text>", gpu2);
  const size_t holder_end = svg.find("</text>", id_end + 1);
  EXPECT_EQ(svg.substr(id_end - 5, 5), ">gpu2");
  EXPECT_EQ(svg.substr(holder_end - 21, 21), ">default/trainer/main");
  EXPECT_THAT(svg, HasSubstr(">free</text>"));
  EXPECT_THAT(svg, HasSubstr(">ml/a/x, ml/b/y</text>"));
  for (const char* label : {">Healthy</text>", ">Unhealthy</text>", ">Unknown</text>"}) {
    EXPECT_THAT(svg, HasSubstr(label));
  }
  for (const char* fill : {kSvgHealthyFill, kSvgUnhealthyFill, kSvgUnknownFill}) {
    EXPECT_THAT(svg, HasSubstr(absl::StrCat("class=\"legend\"")));
    EXPECT_THAT(svg, HasSubstr(absl::StrCat("fill=\"", fill, "\"")));
  }
  EXPECT_THAT(svg, HasSubstr(">NUMA node 0</text>"));
  EXPECT_THAT(svg, HasSubstr(">CPUs 0-3,8-11,15</text>"));
  EXPECT_THAT(svg, HasSubstr(">no NUMA affinity</text>"));
  EXPECT_THAT(svg, HasSubstr("stroke-dasharray"));
  EXPECT_THAT(svg, Not(HasSubstr("<script")));
  EXPECT_THAT(svg, Not(HasSubstr("href")));
}

TEST(TopologySvg, EscapesHostileLabelsEverywhere) {
  admin::NodeTopology topology;
  topology.set_node_name("n<&\"'>");
  admin::TopologyResource* resource = topology.add_resources();
  resource->set_name("r<&\"'>");
  AddDevice(resource, "<&\"'>", "Healthy", {0}, {"ns/<script>alert(1)</script>/c&"});
  AddDevice(resource, "]]><!--", "Unhealthy", {});
  AddDevice(resource, std::string("bad\x01\xff\xc3\xa9", 7), "Healthy", {});
  const std::string svg = TopologySvg(topology);
  EXPECT_EQ(XmlProblem(svg), "") << svg;
  EXPECT_THAT(svg, HasSubstr("data-device=\"&lt;&amp;&quot;&apos;&gt;\""));
  EXPECT_THAT(svg, HasSubstr(">&lt;&amp;&quot;&apos;&gt;</text>"));
  EXPECT_THAT(svg, HasSubstr("data-resource=\"r&lt;&amp;&quot;&apos;&gt;\""));
  EXPECT_THAT(svg, HasSubstr("node n&lt;&amp;&quot;&apos;&gt;"));
  EXPECT_THAT(svg, HasSubstr("ns/&lt;script&gt;alert(1)&lt;/script&gt;/c&amp;"));
  EXPECT_THAT(svg, Not(HasSubstr("<&")));
  EXPECT_THAT(svg, Not(HasSubstr("<script")));
  EXPECT_THAT(svg, Not(HasSubstr("<!--")));
  // Invalid UTF-8 and a control character become '?'; valid UTF-8 stays.
  EXPECT_THAT(svg, HasSubstr("data-device=\"bad??\xc3\xa9\""));
}

TEST(TopologySvg, ShortensLongLabelsAndKeepsTheFullTextInTheTooltip) {
  admin::NodeTopology topology;
  admin::TopologyResource* resource = topology.add_resources();
  resource->set_name("r");
  const std::string id(100, 'x');
  AddDevice(resource, id, "Healthy", {0});
  const std::string svg = TopologySvg(topology);
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_THAT(svg, HasSubstr(absl::StrCat(">", std::string(39, 'x'), "\xE2\x80\xA6</text>")));
  EXPECT_THAT(svg, HasSubstr(absl::StrCat("r ", id, ": Healthy, free</title>")));
  // Sized for 40 characters, not 100.
  EXPECT_LT(IntAttribute(svg, "<svg ", "width"), 500);
}

TEST(XmlEscape, EscapesTheFiveAndReplacesWhatXmlForbids) {
  EXPECT_EQ(XmlEscape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
  EXPECT_EQ(XmlEscape(std::string("a\x01"
                                  "b\xff"
                                  "c\t",
                                  6)),
            "a?b?c\t");
  EXPECT_EQ(XmlEscape("\xc3\xa9\xe2\x80\xa6\xf0\x9f\x98\x80"),
            "\xc3\xa9\xe2\x80\xa6\xf0\x9f\x98\x80");
  EXPECT_EQ(XmlEscape("\xc0\xaf"), "??");       // overlong '/'
  EXPECT_EQ(XmlEscape("\xed\xa0\x80"), "???");  // a surrogate
  EXPECT_EQ(XmlEscape("\xef\xbf\xbe"), "???");  // U+FFFE
  EXPECT_EQ(XmlEscape("\xe2\x80"), "??");       // truncated
}

TEST(TopologyJson, ListsEverythingInTheMessagesOrder) {
  const nlohmann::json json = TopologyJson(Sample());
  EXPECT_EQ(json["node_name"], "node-a");
  EXPECT_EQ(json["numa_nodes"][0],
            nlohmann::json::parse(R"({"id": 0, "cpus": [0, 1, 2, 3, 8, 9, 10, 11, 15]})"));
  EXPECT_EQ(json["numa_nodes"][1], nlohmann::json::parse(R"({"id": 1, "cpus": []})"));
  EXPECT_EQ(json["resources"][0]["devices"][1],
            nlohmann::json::parse(
                R"({"id": "gpu2", "health": "Unhealthy", "numa": [0],
                    "holders": ["default/trainer/main"]})"));
  EXPECT_EQ(json["resources"][0]["devices_omitted"], 5);
  EXPECT_EQ(json["resources"][2]["kind"], "dra");
  EXPECT_EQ(json["resources"][1]["devices"][0]["numa"], nlohmann::json::array());
}

}  // namespace
}  // namespace kdp::manager
