// Rendering of the node's topology (kdp.admin.v1.NodeTopology, the answer of GetTopology) for
// `kdpctl topology`: a terminal tree, an SVG picture and the `-o json` document. The admin server
// builds the message; kdpctl only fetches and prints; the unit tests call these functions on
// hand-built messages, without a process.
//
// Placement rules shared by every form: NUMA nodes ascending (the machine's, plus any node a
// device names that the machine does not list); within a node, resources in the message's order
// (device plugins then DRA drivers, each by name) and devices in natural ID order ("gpu-2" before
// "gpu-10"); a device with several NUMA nodes is drawn once, under its lowest node, labelled with
// all of them; devices without NUMA affinity go to their own branch (box) after the nodes.
//
// Every string from a peer (device IDs, resource, pod and container names) is made safe for its
// output: control characters become '?' in the tree; in the SVG, invalid UTF-8 and characters
// XML 1.0 forbids become '?' and the rest is escaped (& < > " ').
//
// Pure functions of their arguments: thread-safe.
#ifndef KDP_MANAGER_SRC_ADMIN_TOPOLOGY_RENDER_H_
#define KDP_MANAGER_SRC_ADMIN_TOPOLOGY_RENDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "kdp/admin/v1/admin.pb.h"
#include "nlohmann/json.hpp"

namespace kdp::manager {

// CPU (or node) numbers as compact ranges, ascending and without duplicates: {0..7, 16..23} is
// "0-7,16-23"; "" for none. The input need not be sorted.
std::string CompactRanges(std::vector<int64_t> numbers);

struct TopologyTreeOptions {
  // Draw the branches with ASCII ("|-- ", "`-- ", "|   ") instead of box-drawing characters
  // ("├── ", "└── ", "│   "), for terminals without UTF-8.
  bool ascii = false;
};

// The node as a tree, one line per NUMA node, resource and device, ending in a newline:
//
//   node node-a
//   ├── NUMA node 0: CPUs 0-7,16-23
//   │   └── example.com/gpu
//   │       ├── gpu-0  Healthy    default/trainer/main
//   │       └── gpu-1  Unhealthy  free
//   └── no NUMA affinity
//       └── gpu.example.com (DRA)
//           └── node-a/gpu9  Unknown  free
std::string TopologyTree(const kdp::admin::v1::NodeTopology& topology,
                         const TopologyTreeOptions& options = {});

// Fill colours of device boxes by health, as "#rrggbb" (the legend uses the same).
inline constexpr char kSvgHealthyFill[] = "#66bb6a";
inline constexpr char kSvgUnhealthyFill[] = "#ef5350";
inline constexpr char kSvgUnknownFill[] = "#bdbdbd";

// The node as a self-contained SVG 1.1 document (no external references, no scripts): a title,
// a legend, each NUMA node as a labelled box with its CPU ranges, each device as a smaller box
// inside it filled by health (healthy green, unhealthy red, anything else grey) and labelled with
// its ID and holders (or "free"); devices without NUMA affinity in a separate dashed box. Sized to
// its content (width and height in px on the root element), on a white background. Each device
// box is `<rect class="device" data-resource="R" data-device="ID" x= y= width= height= ...>`
// (attributes in that order) so that tools and tests can find it; labels longer than 40
// characters are shortened with "…" and the full text is in the box's <title> tooltip.
std::string TopologySvg(const kdp::admin::v1::NodeTopology& topology);

// `kdpctl topology -o json`: {"node_name", "numa_nodes": [{"id", "cpus": [numbers]}],
// "resources": [{"name", "kind", "devices": [{"id", "health", "numa": [numbers],
// "holders": [strings]}], "devices_omitted"}]}, in the message's order.
nlohmann::json TopologyJson(const kdp::admin::v1::NodeTopology& topology);

// `text` as XML character data or attribute value: valid UTF-8 kept, every invalid byte and
// every character XML 1.0 forbids (controls other than tab, LF, CR; U+FFFE, U+FFFF) replaced by
// '?', and & < > " ' escaped.
std::string XmlEscape(absl::string_view text);

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_ADMIN_TOPOLOGY_RENDER_H_
