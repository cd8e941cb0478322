// kdpctl topology's tree, SVG and JSON renderings (topology_render.h).
#include "manager/src/admin/topology_render.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "manager/src/devicemanager/allocator.h"

namespace kdp::manager {
namespace {

namespace admin = ::kdp::admin::v1;

// Labels longer than this (in characters) are shortened with "…" in the SVG.
constexpr size_t kMaxSvgLabel = 40;

// The devices of one resource that sit in one group, in natural ID order.
struct Section {
  const admin::TopologyResource* resource = nullptr;
  std::vector<const admin::TopologyDevice*> devices = {};
};

// A NUMA node (numa set) or the devices without NUMA affinity (numa empty), with what sits in it.
struct Group {
  std::optional<int64_t> numa = std::nullopt;
  // The machine lists the node (its CPUs are known, maybe none).
  bool in_machine = false;
  std::vector<int64_t> cpus = {};
  std::vector<Section> sections = {};
};

// Where each device goes: NUMA nodes ascending (the machine's and any a device names), then the
// no-affinity group when any device has no NUMA node.
std::vector<Group> Layout(const admin::NodeTopology& topology) {
  std::map<int64_t, Group> nodes;
  for (const admin::TopologyNumaNode& node : topology.numa_nodes()) {
    Group& group = nodes[node.id()];
    group.numa = node.id();
    group.in_machine = true;
    group.cpus.assign(node.cpus().begin(), node.cpus().end());
  }
  Group none;
  for (const admin::TopologyResource& resource : topology.resources()) {
    std::vector<const admin::TopologyDevice*> devices;
    for (const admin::TopologyDevice& device : resource.devices()) devices.push_back(&device);
    std::stable_sort(devices.begin(), devices.end(),
                     [](const auto* a, const auto* b) { return NaturalLess(a->id(), b->id()); });
    for (const admin::TopologyDevice* device : devices) {
      Group* group = &none;
      if (!device->numa().empty()) {
        const int64_t lowest = *std::min_element(device->numa().begin(), device->numa().end());
        group = &nodes[lowest];
        group->numa = lowest;
      }
      if (group->sections.empty() || group->sections.back().resource != &resource) {
        group->sections.push_back({.resource = &resource, .devices = {}});
      }
      group->sections.back().devices.push_back(device);
    }
  }
  std::vector<Group> out;
  for (auto& [id, group] : nodes) out.push_back(std::move(group));
  if (!none.sections.empty()) out.push_back(std::move(none));
  return out;
}

std::string GroupTitle(const Group& group) {
  return group.numa.has_value() ? absl::StrCat("NUMA node ", *group.numa) : "no NUMA affinity";
}

// "CPUs 0-7,16-23", "no CPUs" (a CPU-less node), "CPUs unknown" (not a node of the machine).
std::string CpuText(const Group& group) {
  if (!group.in_machine) return "CPUs unknown";
  if (group.cpus.empty()) return "no CPUs";
  return absl::StrCat("CPUs ", CompactRanges(group.cpus));
}

std::string ResourceLabel(const admin::TopologyResource& resource) {
  return resource.kind() == "dra" ? absl::StrCat(resource.name(), " (DRA)") : resource.name();
}

// The ID, with every NUMA node when there are several.
std::string DeviceLabel(const admin::TopologyDevice& device) {
  if (device.numa_size() < 2) return device.id();
  std::vector<int64_t> numa(device.numa().begin(), device.numa().end());
  std::sort(numa.begin(), numa.end());
  return absl::StrCat(device.id(), " (NUMA ", absl::StrJoin(numa, ","), ")");
}

std::string HolderText(const admin::TopologyDevice& device) {
  return device.holders().empty() ? "free" : absl::StrJoin(device.holders(), ", ");
}

// Characters (UTF-8 code points) in `text`: its width in a monospace font.
size_t Width(absl::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

// Control characters (which could move the cursor or recolour a terminal) become '?'.
std::string TerminalSafe(absl::string_view text) {
  std::string out(text);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) c = '?';
  }
  return out;
}

std::string Pad(const std::string& text, size_t width) {
  const size_t w = Width(text);
  return w >= width ? text : text + std::string(width - w, ' ');
}

// ---- Tree ----

struct TreeNode {
  std::string label;
  std::vector<TreeNode> children = {};
};

void RenderTree(const std::vector<TreeNode>& nodes, const std::string& prefix,
                const TopologyTreeOptions& options, std::string* out) {
  const char* tee = options.ascii ? "|-- " : "├── ";
  const char* last = options.ascii ? "`-- " : "└── ";
  const char* bar = options.ascii ? "|   " : "│   ";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const bool is_last = i + 1 == nodes.size();
    absl::StrAppend(out, prefix, is_last ? last : tee, nodes[i].label);
    out->push_back('\n');
    RenderTree(nodes[i].children, absl::StrCat(prefix, is_last ? "    " : bar), options, out);
  }
}

// ---- SVG ----

// Valid UTF-8 code points of `text` (one per entry); an invalid byte is '?'.
std::vector<std::string> CodePoints(absl::string_view text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    size_t length = 0;
    uint32_t cp = 0;
    if (lead < 0x80) {
      length = 1;
      cp = lead;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
      cp = lead & 0x1F;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      cp = lead & 0x0F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      cp = lead & 0x07;
    }
    bool valid = length > 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      valid = (c & 0xC0) == 0x80;
      cp = (cp << 6) | (c & 0x3F);
    }
    // Overlong forms, surrogates, beyond U+10FFFF, and what XML 1.0 forbids.
    if (valid) {
      const uint32_t min = length == 2 ? 0x80 : length == 3 ? 0x800 : length == 4 ? 0x10000 : 0;
      valid = cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF) && cp != 0xFFFE &&
              cp != 0xFFFF && (cp >= 0x20 || cp == '\t' || cp == '\n' || cp == '\r') && cp != 0x7F;
    }
    if (valid) {
      out.emplace_back(text.substr(i, length));
      i += length;
    } else {
      out.emplace_back("?");
      ++i;
    }
  }
  return out;
}

// `text` shortened to kMaxSvgLabel characters (the last one "…"), XML-escaped.
std::string SvgLabel(absl::string_view text) {
  std::vector<std::string> points = CodePoints(text);
  if (points.size() > kMaxSvgLabel) {
    points.resize(kMaxSvgLabel - 1);
    points.emplace_back("\xE2\x80\xA6");  // U+2026
  }
  return XmlEscape(absl::StrJoin(points, ""));
}

const char* HealthFill(const std::string& health) {
  if (health == "Healthy") return kSvgHealthyFill;
  if (health == "Unhealthy") return kSvgUnhealthyFill;
  return kSvgUnknownFill;
}

const char* HealthStroke(const std::string& health) {
  if (health == "Healthy") return "#1b5e20";
  if (health == "Unhealthy") return "#b71c1c";
  return "#616161";
}

// Geometry, in px. Text is monospace: a character is at most 0.61 em wide (DejaVu Sans Mono's
// advance is 0.602 em), so widths are estimated from character counts.
constexpr int kMargin = 20;
constexpr int kGap = 20;             // between boxes
constexpr int kPad = 12;             // inside a NUMA box
constexpr int kTitleHeight = 46;     // a NUMA box's title and CPU lines
constexpr int kSectionHeading = 22;  // a resource's name inside a box
constexpr int kDeviceHeight = 40;    // two lines: ID, holders
constexpr int kDeviceGap = 6;
constexpr int kColumns = 4;           // NUMA boxes per row
constexpr double kCharWidth12 = 7.4;  // 12 px
constexpr double kCharWidth14 = 8.6;  // 14 px
constexpr int kHeaderHeight = 76;     // the node's title and the legend

int TextWidth(size_t chars, double char_width) {
  return static_cast<int>(static_cast<double>(chars) * char_width + 0.999);
}

int BoxHeight(const Group& group) {
  int height = kTitleHeight + kPad;
  if (group.sections.empty()) return height + 20;
  for (const Section& section : group.sections) {
    height +=
        kSectionHeading + static_cast<int>(section.devices.size()) * (kDeviceHeight + kDeviceGap);
  }
  return height;
}

}  // namespace

std::string CompactRanges(std::vector<int64_t> numbers) {
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  std::string out;
  for (size_t i = 0; i < numbers.size();) {
    size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    if (!out.empty()) out.push_back(',');
    absl::StrAppend(&out, numbers[i]);
    if (j > i) absl::StrAppend(&out, "-", numbers[j]);
    i = j + 1;
  }
  return out;
}

std::string XmlEscape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const std::string& point : CodePoints(text)) {
    if (point == "&") {
      out += "&amp;";
    } else if (point == "<") {
      out += "&lt;";
    } else if (point == ">") {
      out += "&gt;";
    } else if (point == "\"") {
      out += "&quot;";
    } else if (point == "'") {
      out += "&apos;";
    } else {
      out += point;
    }
  }
  return out;
}

std::string TopologyTree(const admin::NodeTopology& topology, const TopologyTreeOptions& options) {
  std::vector<TreeNode> top;
  for (const Group& group : Layout(topology)) {
    TreeNode node{.label = group.numa.has_value()
                               ? absl::StrCat(GroupTitle(group), ": ", CpuText(group))
                               : GroupTitle(group)};
    for (const Section& section : group.sections) {
      TreeNode resource{.label = TerminalSafe(ResourceLabel(*section.resource))};
      size_t id_width = 0;
      size_t health_width = 0;
      for (const auto* device : section.devices) {
        id_width = std::max(id_width, Width(TerminalSafe(DeviceLabel(*device))));
        health_width = std::max(health_width, Width(TerminalSafe(device->health())));
      }
      for (const auto* device : section.devices) {
        resource.children.push_back(
            {.label = absl::StrCat(Pad(TerminalSafe(DeviceLabel(*device)), id_width), "  ",
                                   Pad(TerminalSafe(device->health()), health_width), "  ",
                                   TerminalSafe(HolderText(*device)))});
      }
      node.children.push_back(std::move(resource));
    }
    top.push_back(std::move(node));
  }
  for (const admin::TopologyResource& resource : topology.resources()) {
    if (resource.devices_omitted() <= 0) continue;
    top.push_back({.label = absl::StrCat(TerminalSafe(ResourceLabel(resource)), ": ",
                                         resource.devices_omitted(), " more devices not listed")});
  }
  if (top.empty()) top.push_back({.label = "no NUMA nodes or devices known"});
  std::string out = absl::StrCat(
      "node ", TerminalSafe(topology.node_name().empty() ? "(unnamed)" : topology.node_name()));
  out.push_back('\n');
  RenderTree(top, "", options, &out);
  // Trailing spaces from padding the last column never occur: holders are last and unpadded.
  return out;
}

std::string TopologySvg(const admin::NodeTopology& topology) {
  const std::vector<Group> groups = Layout(topology);
  const std::string node_name = topology.node_name().empty() ? "(unnamed)" : topology.node_name();
  // One column width for every box, from its widest label.
  size_t chars12 = 0;
  size_t chars14 = 0;
  for (const Group& group : groups) {
    chars14 = std::max(chars14, Width(GroupTitle(group)));
    chars12 = std::max(chars12, std::min(Width(CpuText(group)), kMaxSvgLabel));
    for (const Section& section : group.sections) {
      chars12 = std::max(chars12, std::min(Width(ResourceLabel(*section.resource)), kMaxSvgLabel));
      for (const auto* device : section.devices) {
        chars12 = std::max(chars12, std::min(Width(DeviceLabel(*device)), kMaxSvgLabel));
        chars12 = std::max(chars12, std::min(Width(HolderText(*device)), kMaxSvgLabel));
      }
    }
  }
  // Device text starts 8 px into its box, which keeps 16 px free on its right.
  const int column = std::max({200, 2 * kPad + 8 + 16 + TextWidth(chars12, kCharWidth12),
                               2 * kPad + TextWidth(chars14, kCharWidth14)});
  const int columns = std::max(1, std::min(kColumns, static_cast<int>(groups.size())));
  const std::string title = absl::StrCat("node ", node_name);
  const int legend_width = 3 * 110;
  const int width =
      2 * kMargin + std::max({columns * column + (columns - 1) * kGap, legend_width,
                              TextWidth(std::min(Width(title), kMaxSvgLabel + 5), 9.8)});
  // Row heights: the tallest box of each row.
  std::vector<int> rows;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (i % kColumns == 0) rows.push_back(0);
    rows.back() = std::max(rows.back(), BoxHeight(groups[i]));
  }
  int height = kHeaderHeight + kMargin;
  for (int row : rows) height += row + kGap;
  if (rows.empty()) height += 20;

  std::string out = absl::StrCat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"",
      width, "\" height=\"", height, "\" viewBox=\"0 0 ", width, " ", height,
      "\" font-family=\"DejaVu Sans Mono, monospace\">\n");
  absl::StrAppend(&out, "<title>kdp ", SvgLabel(title), "</title>\n");
  absl::StrAppend(&out, "<rect x=\"0\" y=\"0\" width=\"", width, "\" height=\"", height,
                  "\" fill=\"#ffffff\"/>\n");
  absl::StrAppend(&out, "<text x=\"", kMargin, "\" y=\"", kMargin + 12,
                  "\" font-size=\"16\" font-weight=\"bold\" fill=\"#111111\">", SvgLabel(title),
                  "</text>\n");
  // Legend.
  const std::pair<const char*, const char*> legend[] = {
      {kSvgHealthyFill, "Healthy"}, {kSvgUnhealthyFill, "Unhealthy"}, {kSvgUnknownFill, "Unknown"}};
  int x = kMargin;
  for (const auto& [fill, label] : legend) {
    absl::StrAppend(&out, "<rect class=\"legend\" x=\"", x, "\" y=\"", kMargin + 26,
                    "\" width=\"14\" height=\"14\" fill=\"", fill, "\" stroke=\"#424242\"/>\n");
    absl::StrAppend(&out, "<text x=\"", x + 20, "\" y=\"", kMargin + 38,
                    "\" font-size=\"12\" fill=\"#111111\">", label, "</text>\n");
    x += 110;
  }
  if (groups.empty()) {
    absl::StrAppend(&out, "<text x=\"", kMargin, "\" y=\"", kHeaderHeight + 14,
                    "\" font-size=\"12\" fill=\"#111111\">no NUMA nodes or devices known</text>\n");
  }
  int row_y = kHeaderHeight;
  for (size_t i = 0; i < groups.size(); ++i) {
    const Group& group = groups[i];
    const int box_x = kMargin + static_cast<int>(i % kColumns) * (column + kGap);
    const int box_h = rows[i / kColumns];
    absl::StrAppend(&out, "<g class=\"numa\">\n<rect x=\"", box_x, "\" y=\"", row_y, "\" width=\"",
                    column, "\" height=\"", box_h,
                    "\" rx=\"8\" fill=\"#f5f7fa\" stroke=\"#37474f\" stroke-width=\"2\"",
                    group.numa.has_value() ? "" : " stroke-dasharray=\"6 4\"", "/>\n");
    absl::StrAppend(&out, "<text x=\"", box_x + kPad, "\" y=\"", row_y + 22,
                    "\" font-size=\"14\" font-weight=\"bold\" fill=\"#111111\">",
                    SvgLabel(GroupTitle(group)), "</text>\n");
    if (group.numa.has_value()) {
      absl::StrAppend(&out, "<text x=\"", box_x + kPad, "\" y=\"", row_y + 40,
                      "\" font-size=\"12\" fill=\"#37474f\"><title>", XmlEscape(CpuText(group)),
                      "</title>", SvgLabel(CpuText(group)), "</text>\n");
    }
    int y = row_y + kTitleHeight;
    if (group.sections.empty()) {
      absl::StrAppend(&out, "<text x=\"", box_x + kPad, "\" y=\"", y + 14,
                      "\" font-size=\"12\" fill=\"#757575\">no devices</text>\n");
    }
    for (const Section& section : group.sections) {
      absl::StrAppend(&out, "<text x=\"", box_x + kPad, "\" y=\"", y + 15,
                      "\" font-size=\"12\" font-weight=\"bold\" fill=\"#263238\">",
                      SvgLabel(ResourceLabel(*section.resource)), "</text>\n");
      y += kSectionHeading;
      for (const auto* device : section.devices) {
        const std::string holders = HolderText(*device);
        absl::StrAppend(&out, "<g class=\"device\"><title>",
                        XmlEscape(absl::StrCat(section.resource->name(), " ", DeviceLabel(*device),
                                               ": ", device->health(), ", ", holders)),
                        "</title>\n");
        absl::StrAppend(
            &out, "<rect class=\"device\" data-resource=\"", XmlEscape(section.resource->name()),
            "\" data-device=\"", XmlEscape(device->id()), "\" x=\"", box_x + kPad, "\" y=\"", y,
            "\" width=\"", column - 2 * kPad, "\" height=\"", kDeviceHeight, "\" rx=\"4\" fill=\"",
            HealthFill(device->health()), "\" stroke=\"", HealthStroke(device->health()), "\"/>\n");
        absl::StrAppend(&out, "<text x=\"", box_x + kPad + 8, "\" y=\"", y + 16,
                        "\" font-size=\"12\" font-weight=\"bold\" fill=\"#111111\">",
                        SvgLabel(DeviceLabel(*device)), "</text>\n");
        absl::StrAppend(&out, "<text x=\"", box_x + kPad + 8, "\" y=\"", y + 32,
                        "\" font-size=\"12\" fill=\"#111111\">", SvgLabel(holders),
                        "</text>\n</g>\n");
        y += kDeviceHeight + kDeviceGap;
      }
    }
    out += "</g>\n";
    if (i % kColumns == kColumns - 1 || i + 1 == groups.size()) row_y += box_h + kGap;
  }
  out += "</svg>\n";
  return out;
}

nlohmann::json TopologyJson(const admin::NodeTopology& topology) {
  nlohmann::json numa_nodes = nlohmann::json::array();
  for (const admin::TopologyNumaNode& node : topology.numa_nodes()) {
    nlohmann::json cpus = nlohmann::json::array();
    for (int64_t cpu : node.cpus()) cpus.push_back(cpu);
    numa_nodes.push_back({{"id", node.id()}, {"cpus", std::move(cpus)}});
  }
  nlohmann::json resources = nlohmann::json::array();
  for (const admin::TopologyResource& resource : topology.resources()) {
    nlohmann::json devices = nlohmann::json::array();
    for (const admin::TopologyDevice& device : resource.devices()) {
      nlohmann::json numa = nlohmann::json::array();
      for (int64_t node : device.numa()) numa.push_back(node);
      nlohmann::json holders = nlohmann::json::array();
      for (const std::string& holder : device.holders()) holders.push_back(holder);
      devices.push_back({{"id", device.id()},
                         {"health", device.health()},
                         {"numa", std::move(numa)},
                         {"holders", std::move(holders)}});
    }
    resources.push_back({{"name", resource.name()},
                         {"kind", resource.kind()},
                         {"devices", std::move(devices)},
                         {"devices_omitted", resource.devices_omitted()}});
  }
  return {{"node_name", topology.node_name()},
          {"numa_nodes", std::move(numa_nodes)},
          {"resources", std::move(resources)}};
}

}  // namespace kdp::manager
