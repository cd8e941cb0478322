// `kdpctl topology` end to end: kdp-manager and kdp-gpu-plugin on the bundled dual-socket fixture
// (8 GPUs, 4 per NUMA node), a pod admitted, one GPU marked unhealthy. The tree must show the
// pod's container under its GPU on the right NUMA node; the SVG (`--svg FILE`) must render: it is
// rasterised with rsvg-convert (Debian librsvg2-bin), the PNG's size must be the SVG's, and the
// pixels inside the held GPU's box must be the healthy colour (the unhealthy GPU's the unhealthy
// one). The PNG is decoded here with zlib (8-bit RGB or RGBA, non-interlaced, filters 0-4).
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/durable_file.h"
#include "tests/integration/e2e_fixture.h"

namespace kdp::testing {
namespace {

using ::testing::HasSubstr;

// rsvg-convert's path from $PATH, or "" when it is not installed.
std::string FindRsvgConvert() {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path == nullptr ? "/usr/bin:/bin" : path, ':')) {
    const std::string candidate = absl::StrCat(dir, "/rsvg-convert");
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

struct Image {
  uint32_t width = 0;
  uint32_t height = 0;
  int channels = 0;                               // 3 (RGB) or 4 (RGBA)
  std::vector<uint8_t> pixels;                    // rows of width * channels bytes
  uint32_t Pixel(uint32_t x, uint32_t y) const {  // 0xRRGGBB
    const uint8_t* p = &pixels[(static_cast<size_t>(y) * width + x) * channels];
    return (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
  }
};

uint32_t BigEndian32(const std::string& data, size_t at) {
  return (uint32_t{static_cast<uint8_t>(data[at])} << 24) |
         (uint32_t{static_cast<uint8_t>(data[at + 1])} << 16) |
         (uint32_t{static_cast<uint8_t>(data[at + 2])} << 8) | static_cast<uint8_t>(data[at + 3]);
}

// A minimal PNG decoder: 8-bit RGB or RGBA, not interlaced.
absl::StatusOr<Image> DecodePng(const std::string& png) {
  if (png.size() < 33 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) {
    return absl::InvalidArgumentError("not a PNG");
  }
  Image image;
  std::string compressed;
  for (size_t at = 8; at + 12 <= png.size();) {
    const uint32_t length = BigEndian32(png, at);
    const std::string type = png.substr(at + 4, 4);
    if (at + 12 + length > png.size()) return absl::InvalidArgumentError("truncated chunk");
    const std::string data = png.substr(at + 8, length);
    if (type == "IHDR") {
      image.width = BigEndian32(data, 0);
      image.height = BigEndian32(data, 4);
      const int depth = static_cast<uint8_t>(data[8]);
      const int color = static_cast<uint8_t>(data[9]);
      if (depth != 8 || (color != 2 && color != 6) || data[12] != 0) {
        return absl::UnimplementedError(absl::StrCat("PNG depth ", depth, " color type ", color,
                                                     " interlace ", static_cast<int>(data[12])));
      }
      image.channels = color == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      compressed += data;
    } else if (type == "IEND") {
      break;
    }
    at += 12 + length;
  }
  const size_t stride = static_cast<size_t>(image.width) * image.channels;
  std::vector<uint8_t> raw((stride + 1) * image.height);
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(compressed.data()),
                 compressed.size()) != Z_OK ||
      raw_size != raw.size()) {
    return absl::InvalidArgumentError("bad IDAT stream");
  }
  image.pixels.resize(stride * image.height);
  const size_t bpp = image.channels;
  for (size_t y = 0; y < image.height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    uint8_t* out = &image.pixels[y * stride];
    const uint8_t* up = y > 0 ? &image.pixels[(y - 1) * stride] : nullptr;
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= bpp ? out[i - bpp] : 0;
      const int b = up != nullptr ? up[i] : 0;
      const int c = i >= bpp && up != nullptr ? up[i - bpp] : 0;
      int predicted = 0;
      switch (filter) {
        case 0:
          break;
        case 1:
          predicted = a;
          break;
        case 2:
          predicted = b;
          break;
        case 3:
          predicted = (a + b) / 2;
          break;
        case 4: {
          const int p = a + b - c;
          const int pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          predicted = pa <= pb && pa <= pc ? a : (pb <= pc ? b : c);
          break;
        }
        default:
          return absl::InvalidArgumentError(absl::StrCat("bad filter ", filter));
      }
      out[i] = static_cast<uint8_t>(in[i] + predicted);
    }
  }
  return image;
}

// The integer attribute `name` of the element holding `marker` in `svg`; -1 when absent.
int Attribute(const std::string& svg, const std::string& marker, const std::string& name) {
  const size_t at = svg.find(marker);
  if (at == std::string::npos) return -1;
  const size_t start = svg.rfind('<', at);
  const std::string element = svg.substr(start, svg.find('>', at) - start);
  const std::string key = absl::StrCat(" ", name, "=\"");
  const size_t value = element.find(key);
  int out = -1;
  if (value == std::string::npos ||
      !absl::SimpleAtoi(element.substr(value + key.size(),
                                       element.find('"', value + key.size()) - value - key.size()),
                        &out)) {
    return -1;
  }
  return out;
}

class KdpctlTopologyE2E : public E2ETest {
 protected:
  // kdpctl with text output (the fixture's Kdpctl adds -o json).
  CommandResult KdpctlText(std::vector<std::string> args) {
    std::vector<std::string> argv = {KDP_KDPCTL_BIN, "--kubelet-root", Root()};
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<CommandResult> run = RunCommand(argv, absl::Seconds(30));
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : CommandResult{};
  }
};

TEST_F(KdpctlTopologyE2E, TreeAndRenderedSvgShowEachDeviceWithItsHolderAndHealth) {
  const std::string rsvg = FindRsvgConvert();
  ASSERT_FALSE(rsvg.empty()) << "rsvg-convert not found in $PATH: install librsvg2-bin "
                                "(apt-get install librsvg2-bin; scripts/deps installs it)";
  StartManager({"--topology-xml", Fixture(), "--node-name", "topo-node"});
  StartGpuPlugin();
  ASSERT_TRUE(WaitForAllocatable("example.com/gpu", 8, 8)) << manager_->Output();
  KdpctlResult pod = Apply(GpuPod("trainer", 1));
  ASSERT_EQ(pod.exit_code, 0) << pod.out << pod.err;
  const std::string held = pod.json["containers"][0]["devices"]["example.com/gpu"][0];
  // An unhealthy GPU on the other socket: the fixture's gpu4-gpu7 are on NUMA node 1.
  const std::string sick = held == "gpu5" ? "gpu6" : "gpu5";
  WriteHealthFile(sick + "\n");
  ASSERT_TRUE(WaitForAllocatable("example.com/gpu", 7, 8)) << manager_->Output();
  int held_node = -1;
  const nlohmann::json gpus = Resource("example.com/gpu")["devices"];
  for (const auto& device : gpus) {
    if (device["id"] == held) held_node = device["numa"][0];
  }
  ASSERT_GE(held_node, 0);

  // The tree: the holder on the held GPU's line, under its NUMA node, with the node's CPUs.
  CommandResult tree = KdpctlText({"topology"});
  ASSERT_EQ(tree.exit_code, 0) << tree.err;
  EXPECT_THAT(tree.out, HasSubstr("node topo-node\n"));
  EXPECT_THAT(tree.out, HasSubstr("── NUMA node 0: CPUs 0-7,16-23\n"));
  EXPECT_THAT(tree.out, HasSubstr("── NUMA node 1: CPUs 8-15,24-31\n"));
  std::vector<std::string> lines = absl::StrSplit(tree.out, '\n');
  int current_node = -1;
  bool found_held = false;
  bool found_sick = false;
  for (const std::string& line : lines) {
    if (line.find("── NUMA node 0") != std::string::npos) current_node = 0;
    if (line.find("── NUMA node 1") != std::string::npos) current_node = 1;
    if (line.find(absl::StrCat("── ", held, " ")) != std::string::npos) {
      found_held = true;
      EXPECT_EQ(current_node, held_node) << tree.out;
      EXPECT_THAT(line, HasSubstr("Healthy  default/trainer/main")) << tree.out;
    }
    if (line.find(absl::StrCat("── ", sick, " ")) != std::string::npos) {
      found_sick = true;
      EXPECT_EQ(current_node, 1) << tree.out;
      EXPECT_THAT(line, HasSubstr("Unhealthy  free")) << tree.out;
    }
  }
  EXPECT_TRUE(found_held && found_sick) << tree.out;
  CommandResult ascii = KdpctlText({"topology", "--ascii"});
  EXPECT_THAT(ascii.out, HasSubstr("|-- NUMA node 0: CPUs 0-7,16-23\n")) << ascii.out;

  KdpctlResult json = Kdpctl({"topology"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.json["node_name"], "topo-node");
  const nlohmann::json devices = json.json["resources"][0]["devices"];
  for (const auto& device : devices) {
    if (device["id"] == held) {
      EXPECT_EQ(device["holders"], nlohmann::json::array({"default/trainer/main"}));
    }
  }

  // The SVG, rasterised.
  const std::string svg_path = root_.Path("node.svg");
  const std::string png_path = root_.Path("node.png");
  CommandResult drawn = KdpctlText({"topology", "--svg", svg_path});
  ASSERT_EQ(drawn.exit_code, 0) << drawn.err;
  EXPECT_EQ(drawn.out, tree.out);  // --svg prints the tree as well
  const std::string svg = ::kdp::ReadFile(svg_path).value_or("");
  EXPECT_THAT(svg, HasSubstr(">default/trainer/main</text>"));
  absl::StatusOr<CommandResult> converted =
      RunCommand({rsvg, "--format", "png", "--output", png_path, svg_path}, absl::Seconds(30));
  ASSERT_TRUE(converted.ok()) << converted.status();
  ASSERT_EQ(converted->exit_code, 0) << converted->err;
  absl::StatusOr<Image> image = DecodePng(::kdp::ReadFile(png_path).value_or(""));
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->width, static_cast<uint32_t>(Attribute(svg, "<svg ", "width")));
  EXPECT_EQ(image->height, static_cast<uint32_t>(Attribute(svg, "<svg ", "height")));
  // Inside each box, right of its text, away from its border: the box's fill.
  auto fill_of = [&](const std::string& id) {
    const std::string marker = absl::StrCat("data-device=\"", id, "\"");
    const int x = Attribute(svg, marker, "x");
    const int y = Attribute(svg, marker, "y");
    const int w = Attribute(svg, marker, "width");
    const int h = Attribute(svg, marker, "height");
    EXPECT_GT(w, 10) << marker;
    if (w <= 10 || x + w > static_cast<int>(image->width) ||
        y + h > static_cast<int>(image->height)) {
      return uint32_t{0};
    }
    return image->Pixel(static_cast<uint32_t>(x + w - 6), static_cast<uint32_t>(y + h / 2));
  };
  EXPECT_EQ(fill_of(held), 0x66bb6au) << "held " << held;  // kSvgHealthyFill
  EXPECT_EQ(fill_of(sick), 0xef5350u) << "sick " << sick;  // kSvgUnhealthyFill
  EXPECT_EQ(image->Pixel(1, 1), 0xffffffu);                // the white background
  std::printf("FIGURE: kdpctl_topology_svg_bytes %zu\n", svg.size());
  std::printf("FIGURE: kdpctl_topology_png_size %ux%u\n", image->width, image->height);

  // Unwritable target: exit 1, a message naming the file, nothing on stdout.
  CommandResult unwritable = KdpctlText({"topology", "--svg", root_.Path("missing/dir/x.svg")});
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_THAT(unwritable.err, HasSubstr("kdpctl: cannot write "));
  EXPECT_EQ(unwritable.out, "");
}

}  // namespace
}  // namespace kdp::testing
