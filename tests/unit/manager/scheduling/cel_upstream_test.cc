// CEL as DRA users write it: the selector expressions of upstream's tests and documentation and
// of the major DRA drivers, each evaluated against a device and compared with upstream's result;
// then the rest of the DRA CEL environment (arithmetic, ?:, literals, macros, string and list
// libraries) with cel-go's error semantics, the cost limit, and the constructs still refused.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/types.h"
#include "manager/src/controlplane/scheduling/cel_subset.h"

namespace kdp::manager::scheduling {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Attr {
  std::string name;
  resourceapi::DeviceAttribute value;
};
Attr B(std::string name, bool v) {
  Attr a{std::move(name), {}};
  a.value.bool_value = v;
  return a;
}
Attr I(std::string name, int64_t v) {
  Attr a{std::move(name), {}};
  a.value.int_value = v;
  return a;
}
Attr S(std::string name, std::string v) {
  Attr a{std::move(name), {}};
  a.value.string_value = std::move(v);
  return a;
}
Attr V(std::string name, std::string v) {
  Attr a{std::move(name), {}};
  a.value.version_value = std::move(v);
  return a;
}

struct CelDeviceSpec {
  std::string driver;
  std::vector<Attr> attributes;
  std::vector<std::pair<std::string, std::string>> capacity;
};

DeviceView View(const CelDeviceSpec& spec) {
  resourceapi::Device d;
  d.name = "dev-0";
  for (const Attr& a : spec.attributes) d.attributes[a.name] = a.value;
  for (const auto& [name, value] : spec.capacity) d.capacity[name].value = value;
  absl::StatusOr<DeviceView> view = DeviceView::Build(spec.driver, d);
  EXPECT_TRUE(view.ok()) << view.status();
  return *std::move(view);
}

absl::StatusOr<bool> Eval(const std::string& expression, const CelDeviceSpec& device,
                          const CompileOptions& options = {}) {
  absl::StatusOr<CompiledSelector> s = CompiledSelector::Compile(expression, options);
  if (!s.ok()) return s.status();
  return s->Matches(View(device));
}

// One upstream expression: the device it is evaluated for, and upstream's outcome (a match
// result, or a substring of the compile or evaluation error).
struct Case {
  std::string expression;
  CelDeviceSpec device;
  bool match = false;
  std::string error;
};

void Check(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    absl::StatusOr<bool> got = Eval(c.expression, c.device);
    if (!c.error.empty()) {
      ASSERT_FALSE(got.ok()) << c.expression << " matched " << *got;
      EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << c.expression;
      EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.error)) << c.expression;
      continue;
    }
    ASSERT_TRUE(got.ok()) << c.expression << ": " << got.status();
    EXPECT_EQ(*got, c.match) << c.expression;
  }
}

const CelDeviceSpec kNone{"", {}, {}};
const std::string kDra = "dra.example.com";

// k8s.io/dynamic-resource-allocation/cel/compile_test.go (testcases), with its devices; upstream
// reports "Syntax error" where kdp says "syntax error".
TEST(CelUpstream, DynamicResourceAllocationCompileTest) {
  const CelDeviceSpec name_bool{kDra, {B("name", true)}, {}};
  const CelDeviceSpec one_mi{kDra, {}, {{"name", "1Mi"}}};
  const CelDeviceSpec services{kDra, {S("services", "some_example_value")}, {}};
  const CelDeviceSpec all{
      kDra,
      {B("bool", true), I("int", 1), S("string", "fish"), V("version", "1.0.0")},
      {{"quantity", "1Mi"}}};
  Check({
      {"true", kNone, true, ""},
      {"false", kNone, false, ""},
      {"?!", kNone, false, "syntax error"},
      {"1", kNone, false, "must evaluate to bool or the unknown type, not int"},
      {R"(device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0")))", kNone,
       false, "no such key: noSuchAttr"},
      {R"(device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0")))", kNone,
       false, "no such key: noSuchAttr"},
      {R"("no-such-domain" in device.attributes)", kNone, false, ""},
      {R"("dra.example.com" in device.attributes)",
       {"", {B("dra.example.com/something", true)}, {}},
       true,
       ""},
      {R"(device.driver == "")", kNone, true, ""},
      {R"(device.driver == "dra.example.com")", {kDra, {}, {}}, true, ""},
      {R"(device.attributes["dra.example.com"].name)", name_bool, true, ""},
      {R"(device.attributes["dra.example.com"]["name"])", name_bool, true, ""},
      {R"(cel.bind(dra, device.attributes["dra.example.com"], dra.name))", name_bool, true, ""},
      {R"(device.attributes["other.example.com"].name)",
       {kDra, {B("other.example.com/name", true)}, {}},
       true,
       ""},
      {R"(device.attributes["dra.example.com"].name > 0)", {kDra, {I("name", 1)}, {}}, true, ""},
      {R"(device.attributes["dra.example.com"].name == "fish")",
       {kDra, {S("name", "fish")}, {}},
       true,
       ""},
      {R"(device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1")))",
       {kDra, {V("name", "1.0.0")}, {}},
       true,
       ""},
      {R"(device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki")))", one_mi, true,
       ""},
      {R"("name" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki")))",
       one_mi, true, ""},
      {R"(!("name" in device.capacity["dra.example.com"]) || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki")))",
       kNone, true, ""},
      {R"(
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
)",
       all, true, ""},
      {R"(device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && device.attributes["dra.example.com"].c)",
       {kDra, {B("a", true), B("b", true), B("c", true)}, {}},
       true,
       ""},
      {R"(device.attributes.exists_one(x, x == "dra.example.com"))", services, true, ""},
      {R"(device.attributes["dra.example.com"].exists_one(x, x == "services"))", services, true,
       ""},
      {R"(device.attributes["dra.example.com"].services.split("example").size() >= 2)", services,
       true, ""},
      {R"(device.attributes["dra.example.com"].services.matches("[^a]?sym"))",
       {kDra, {S("services", "asymetric")}, {}},
       true,
       ""},
      {R"(device.capacity.exists_one(x, x == "dra.example.com"))",
       {kDra, {}, {{"memory", "1Mi"}}},
       true,
       ""},
      {R"(device.capacity["dra.example.com"].exists_one(x, x == "memory"))",
       {kDra, {}, {{"memory", "1Mi"}}},
       true,
       ""},
  });
}

// Upstream's "expensive" case: an estimated cost of 85,555,551 (API validation refuses it as
// "too complex, exceeds cost limit"); evaluated anyway, it fails with "actual cost limit exceeded".
TEST(CelUpstream, ExpensiveExpressionIsRefusedAndCancelled) {
  const std::string ten = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]";
  const std::string expression = ten + ".all(x, " + ten + ".all(y, " + ten + ".all(z, " + ten +
                                 ".all(z2, " + ten + ".all(z3, " + ten + ".all(z4, " + ten +
                                 ".all(z5, int('1'.find('[0-9]*')) < 100)))))))";
  absl::StatusOr<CompiledSelector> refused = CompiledSelector::Compile(expression);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("too complex, exceeds cost limit (estimated cost "));
  absl::StatusOr<bool> cancelled = Eval(expression, {kDra, {}, {}}, {.max_estimated_cost = 0});
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cancelled.status().message(), "operation cancelled: actual cost limit exceeded");
}

// The older "expensive" case of compile_test.go: 32,000 attributes (the API allows 32), each
// traversed twice; the estimate (for 32) passes, the evaluation is cancelled.
TEST(CelUpstream, ManyAttributesExceedTheRuntimeLimit) {
  CelDeviceSpec device{kDra, {}, {}};
  for (int i = 0; i < 1000 * 32; ++i) {
    const std::string suffix = "-" + std::to_string(i);
    device.attributes.push_back(
        S(kDra + "/" + std::string(32 - suffix.size(), 'x') + suffix, "abc"));
  }
  const std::string expression =
      R"(device.attributes["dra.example.com"].map(s, s.lowerAscii()).map(s, s.size()).sum() == 0)";
  absl::StatusOr<CompiledSelector> s = CompiledSelector::Compile(expression);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_LT(s->max_cost(), kCelSelectorExpressionMaxCost);
  absl::StatusOr<bool> got = s->Matches(View(device));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "operation cancelled: actual cost limit exceeded");
  device.attributes.resize(32);  // within the API's bound: evaluates, as the estimate promised
  got = s->Matches(View(device));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(*got);
}

// Device classes, documentation and tests of the drivers and of Kubernetes.
TEST(CelUpstream, DriverAndDocumentationExpressions) {
  const CelDeviceSpec nvidia_gpu{"gpu.nvidia.com",
                                 {S("type", "gpu"), S("productName", "NVIDIA GeForce RTX 3090 Ti"),
                                  S("uuid", "GPU-1"), I("index", 0)},
                                 {{"memory", "24Gi"}}};
  const CelDeviceSpec nvidia_mig{
      "gpu.nvidia.com", {S("type", "mig"), S("profile", "3g.40gb")}, {{"memory", "40Gi"}}};
  const CelDeviceSpec intel{"gpu.intel.com",
                            {S("model", "A770"), S("driver", "vfio-pci"), B("sriov", false),
                             S("pciId", "0xe223"), S("pciAddress", "0000:03:00.0")},
                            {{"memory", "16Gi"}}};
  const CelDeviceSpec example{"gpu.example.com",
                              {S("type", "gpu"), I("index", 3), S("model", "LATEST-GPU-MODEL")},
                              {{"memory", "80Gi"}}};
  Check({
      // NVIDIA k8s-dra-driver-gpu's DeviceClasses gpu.nvidia.com and mig.nvidia.com (as published
      // in its Helm chart and quoted in its users' documentation).
      {"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
       nvidia_gpu, true, ""},
      {"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
       nvidia_mig, false, ""},
      {"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
       nvidia_mig, true, ""},
      // Claims from NVIDIA's demos and from users' manifests in public repositories.
      {"device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0", nvidia_mig,
       true, ""},
      {"device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0", nvidia_gpu,
       false, ""},
      {"device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*rtx 3090 "
       "ti.*$')",
       nvidia_gpu, true, ""},
      {"device.attributes['gpu.nvidia.com'].profile == '4g.40gb' || "
       "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'",
       nvidia_mig, true, ""},
      {"device.attributes['gpu.nvidia.com'].uuid == 'GPU-1'", nvidia_gpu, true, ""},
      // Intel gpu.intel.com selectors: the VFIO selector of Intel's GPU tooling, and users'
      // claims in public repositories (model, pciId, sriov, pciAddress).
      {"device.attributes[\"gpu.intel.com\"].driver == 'vfio-pci'", intel, true, ""},
      {"device.driver == \"gpu.intel.com\" && device.attributes[\"gpu.intel.com\"].pciId == "
       "\"0xe223\"",
       intel, true, ""},
      {"device.attributes[\"gpu.intel.com\"].model == \"A770\"", intel, true, ""},
      {"device.attributes[\"gpu.intel.com\"].sriov == false", intel, true, ""},
      {"device.attributes[\"gpu.intel.com\"].pciAddress in ['0000:03:00.0', '0000:04:00.0']", intel,
       true, ""},
      // kubernetes.io dynamic-resource-allocation page: the example DeviceClass.
      {"device.driver == 'gpu.example.com' && device.attributes['gpu.example.com'].type == 'gpu'",
       example, true, ""},
      // cluster-autoscaler's DRA tests (dra-example-driver devices), and the example driver's
      // model attribute as kdp's other tests model it.
      {"device.attributes['gpu.example.com'].index in [1,3,4]", example, true, ""},
      {"device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL'", example, true, ""},
      // Kubernetes structured allocator_test.go and the API's capacity request documentation.
      {R"(device.capacity["gpu.example.com"].memory.compareTo(quantity("1Gi")) >= 0)", example,
       true, ""},
      {"device.capacity['test-driver.cdi.k8s.io'].counters.compareTo(quantity('2')) >= 0",
       {"test-driver.cdi.k8s.io", {}, {{"counters", "4"}}},
       true,
       ""},
      // compile.go's comment on cel.bind.
      {R"(cel.bind(dra, device.attributes["dra.example.com"], dra.oneBool && dra.anotherBool))",
       {kDra, {B("oneBool", true), B("anotherBool", false)}, {}},
       false,
       ""},
      // test/e2e/dra: "Runtime error on one node, but not all".
      {R"(device.attributes["dra.example.com"].exists)", {kDra, {B("exists", true)}, {}}, true, ""},
      {R"(device.attributes["dra.example.com"].exists)",
       {kDra, {}, {}},
       false,
       "no such key: exists"},
      // allocator_test.go: an undeclared variable is a compile error.
      {"noSuchVar", kNone, false, "undeclared reference to \"noSuchVar\""},
  });
}

const CelDeviceSpec kExampleGpu{
    "gpu.example.com",
    {S("model", "LATEST-GPU-MODEL"), I("index", 3), S("services", "a,b,c"),
     S("text", "  Hello, W\xc3\xb6rld  "), B("healthy", true)},
    {{"memory", "80Gi"}}};
const std::string kAttr = "device.attributes['gpu.example.com']";

TEST(CelEnvironment, ArithmeticConditionalAndLiterals) {
  std::vector<Case> cases;
  for (const char* e : {
           "1 + 2 * 3 == 7",
           "(1 + 2) * 3 == 9",
           "7 / 2 == 3",
           "-7 / 2 == -3",
           "-7 % 2 == -1",
           "7 % -2 == 1",
           "10 - 3 - 2 == 5",
           "-(1 - 3) == 2",
           "'ab' + 'c' == 'abc'",
           "[1] + [2, 3] == [1, 2, 3]",
           "[1, 2][1] == 2",
           "{'a': 1, 'b': 2}['b'] == 2",
           "{'a': 1}.a == 1",
           "{1: 'x'}[1] == 'x'",
           "'a' in {'a': 1}",
           "!('b' in {'a': 1})",
           "2 in [1, 2]",
           "!('x' in [1, 2])",
           "[] == []",
           "[[1], [2, 3]] == [[1], [2, 3]]",
           "{'a': [1]} == {'a': [1]}",
           "{'a': 1} != {'a': 2}",
           "true ? true : false",
           "false ? false : 1 == 1",
           "(1 > 2 ? 'a' : 'b') == 'b'",
           "true ? 1 == 1 : 1 / 0 == 1",  // only the chosen branch is evaluated
           "has({'a': 1}.a) && !has({'a': 1}.b)",
           "9223372036854775807 - 1 + 1 > 0",
           "-9223372036854775808 + 1 < 0",
       }) {
    cases.push_back({e, kExampleGpu, true, ""});
  }
  cases.push_back({kAttr + ".index * 2 + 1 == 7", kExampleGpu, true, ""});
  cases.push_back(
      {kAttr + ".index % 2 == 1 ? " + kAttr + ".healthy : false", kExampleGpu, true, ""});
  Check(cases);
}

TEST(CelEnvironment, MacrosOverListsAndMaps) {
  Check({
      {"[1, 2, 3].all(x, x > 0)", kExampleGpu, true, ""},
      {"[1, 2, 3].exists(x, x == 2)", kExampleGpu, true, ""},
      {"[1, 2, 3].exists_one(x, x > 1)", kExampleGpu, false, ""},
      {"[1, 2, 3].map(x, x * 2) == [2, 4, 6]", kExampleGpu, true, ""},
      {"[1, 2, 3].map(x, x > 1, x * 10) == [20, 30]", kExampleGpu, true, ""},
      {"[1, 2, 3].filter(x, x % 2 == 1) == [1, 3]", kExampleGpu, true, ""},
      {"{'a': 1, 'b': 2}.map(k, k) == ['a', 'b']", kExampleGpu, true, ""},
      {"{'a': 1, 'b': 2}.filter(k, k == 'b').size() == 1", kExampleGpu, true, ""},
      {"[].all(x, x > 0) && ![].exists(x, true)", kExampleGpu, true, ""},
      {kAttr + ".exists(id, id == 'model')", kExampleGpu, true, ""},
      {kAttr + ".all(id, id.size() > 3)", kExampleGpu, true, ""},
      {kAttr + ".filter(id, id.startsWith('m')) == ['memory', 'model'].filter(x, x != 'memory')",
       kExampleGpu, true, ""},
      {"device.attributes.all(d, device.attributes[d].size() > 0)", kExampleGpu, true, ""},
      {"device.capacity['gpu.example.com'].exists(c, "
       "device.capacity['gpu.example.com'][c].compareTo(quantity('1Gi')) > 0)",
       kExampleGpu, true, ""},
      {kAttr + ".services.split(',').exists(s, s == 'b')", kExampleGpu, true, ""},
      {"[[1, 2], [3]].all(l, l.all(x, x > 0))", kExampleGpu, true, ""},
      {"[1, 2].all(x, [3, 4].exists(x, x == 4))", kExampleGpu, true, ""},  // shadowing
      {"cel.bind(m, " + kAttr + ".model, m.startsWith('LATEST') && m.endsWith('MODEL'))",
       kExampleGpu, true, ""},
      {"cel.bind(x, [1, 2], x.map(y, y + x.size())) == [3, 4]", kExampleGpu, true, ""},
  });
}

TEST(CelEnvironment, StringAndListLibraries) {
  std::vector<Case> cases;
  for (const std::string& e : std::vector<std::string>{
           kAttr + ".model.lowerAscii() == 'latest-gpu-model'",
           "'aBc\xc3\xa9'.upperAscii() == 'ABC\xc3\xa9'",
           kAttr + ".text.trim() == 'Hello, W\xc3\xb6rld'",
           kAttr + ".text.trim().size() == 12",  // code points
           "size('\xc3\xa9t\xc3\xa9') == 3",
           "'a,b,,c'.split(',') == ['a', 'b', '', 'c']",
           "'a,b,c'.split(',', 2) == ['a', 'b,c']",
           "'abc'.split('') == ['a', 'b', 'c']",
           "'a,b'.split(',', 0) == []",
           "['a', 'b'].join() == 'ab' && ['a', 'b'].join('-') == 'a-b'",
           "'hello mellow'.indexOf('ello') == 1 && 'hello mellow'.indexOf('ello', 2) == 7",
           "'hello mellow'.indexOf('') == 0 && 'hello mellow'.indexOf('', 2) == 2",
           "'hello mellow'.indexOf('jello') == -1",
           "'hello mellow'.lastIndexOf('ello') == 7 && 'hello mellow'.lastIndexOf('ello', 6) == 1",
           "'hello'.lastIndexOf('') == 5",
           "'ta\xc2\xa9o\xc2\xa9\xce\xb1T'.indexOf('\xc2\xa9', 3) == 4",
           "'tacocat'.substring(4) == 'cat' && 'tacocat'.substring(0, 4) == 'taco'",
           "'tacocat'.charAt(3) == 'o' && 'tacocat'.charAt(7) == ''",
           "'aaa'.replace('a', 'b') == 'bbb' && 'aaa'.replace('a', 'b', 2) == 'bba'",
           "'ab'.replace('', '-') == '-a-b-'",
           "'abc'.contains('b') && 'abc'.startsWith('ab') && 'abc'.endsWith('bc')",
           "'abc123def'.find('[0-9]+') == '123' && 'abc'.find('[0-9]+') == ''",
           "'a1b22c333'.findAll('[0-9]+') == ['1', '22', '333']",
           "'a1b22c333'.findAll('[0-9]+', 2) == ['1', '22']",
           "'LATEST'.matches(" + kAttr + ".model.substring(0, 3))",  // a run-time pattern
           "[1, 2, 3].isSorted() && ![2, 1].isSorted() && ['a', 'b'].isSorted()",
           "[1, 2, 3].sum() == 6 && [].sum() == 0",
           "[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3 && ['b', 'a'].min() == 'a'",
           "[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2 && [1].indexOf(5) == -1",
           "size([1, 2]) == 2 && [1, 2].size() == 2 && {'a': 1}.size() == 1",
           "device.attributes['gpu.example.com'].size() == 5 && size(device.capacity) == 1",
           "sets.contains([1, 2, 3], [3, 1]) && !sets.contains([1], [2])",
           "sets.intersects([1, 2], [2, 5]) && sets.equivalent([1, 2, 2], [2, 1])",
           "int('42') + 1 == 43 && int(-3) == -3 && string(12) == '12' && string(true) == 'true'",
           "dyn(1) == 1",
           "quantity('1500m').sign() == 1 && !quantity('1500m').isInteger()",
           "quantity('2Ki').asInteger() == 2048 && isQuantity('1Gi') && !isQuantity('1 Gi')",
           "isSemver('1.2.3') && !isSemver('1.2')",
       }) {
    cases.push_back({e, kExampleGpu, true, ""});
  }
  Check(cases);
}

// cel-go's runtime errors, and its error semantics inside macros: all() and exists() are
// commutative over errors (a false, resp. true, element decides), the other macros are not.
TEST(CelEnvironment, RuntimeErrorsFollowCelGo) {
  Check({
      {"1 / 0 == 0", kExampleGpu, false, "division by zero"},
      {"1 % 0 == 0", kExampleGpu, false, "modulus by zero"},
      {"9223372036854775807 + 1 > 0", kExampleGpu, false, "integer overflow"},
      {"-9223372036854775808 - 1 < 0", kExampleGpu, false, "integer overflow"},
      {"4611686018427387904 * 2 > 0", kExampleGpu, false, "integer overflow"},
      {"-9223372036854775808 / -1 > 0", kExampleGpu, false, "integer overflow"},
      {"-9223372036854775808 % -1 == 0", kExampleGpu, false, "integer overflow"},
      {"-(-9223372036854775808) > 0", kExampleGpu, false, "integer overflow"},
      {"[9223372036854775807, 1].sum() > 0", kExampleGpu, false, "integer overflow"},
      {"[1, 2][2] == 1", kExampleGpu, false, "index '2' out of range in list size '2'"},
      {"{'a': 1}.b == 1", kExampleGpu, false, "no such key: b"},
      {"{'a': 1, 'a': 2}.size() == 1", kExampleGpu, false, "Failed with repeated key"},
      {"(1 / 0 == 1) ? true : true", kExampleGpu, false, "division by zero"},
      {"[].min() == 1", kExampleGpu, false, "min called on empty list"},
      {"'abc'.substring(4) == ''", kExampleGpu, false, "index out of range: 4"},
      {"'abc'.substring(2, 1) == ''", kExampleGpu, false,
       "invalid substring range. start: 2, end: 1"},
      {"''.indexOf('a') == -1", kExampleGpu, false, "index out of range: 0"},
      {"'abc'.charAt(4) == ''", kExampleGpu, false, "index out of range: 4"},
      {"int('x') == 1", kExampleGpu, false, "strconv.ParseInt: parsing \"x\": invalid syntax"},
      {"int('9223372036854775808') == 1", kExampleGpu, false, "value out of range"},
      {"'a'.matches(" + kAttr + ".model + '[') ", kExampleGpu, false, "error parsing regexp"},
      {"quantity('1500m').asInteger() == 1", kExampleGpu, false, "cannot convert value to integer"},
      {"[1, dyn('a')].isSorted()", kExampleGpu, false, "no such overload"},
      // Errors inside macros.
      {"[1, 2].exists(x, " + kAttr + ".nope == x)", kExampleGpu, false, "no such key: nope"},
      {"[1, 0].all(x, 10 / x > 0)", kExampleGpu, false, "division by zero"},
      {"[0, 1].all(x, 10 / x > 100)", kExampleGpu, false, ""},    // the false element decides
      {"[1, 0].all(x, 10 / x > 100)", kExampleGpu, false, ""},    // whatever its position
      {"[0, 1].exists(x, 10 / x == 10)", kExampleGpu, true, ""},  // the true element decides
      {"[0].exists(x, 10 / x == 1)", kExampleGpu, false, "division by zero"},
      {"[1, 0].exists_one(x, 10 / x == 10)", kExampleGpu, false, "division by zero"},
      {"[1, 0].map(x, 10 / x) == [10]", kExampleGpu, false, "division by zero"},
      {"[1, 0].filter(x, 10 / x > 0) == [1]", kExampleGpu, false, "division by zero"},
      {"[1, 0].map(x, x > 0, 10 / x) == [10]", kExampleGpu, true, ""},  // filtered out first
      {"device.attributes.exists(d, device.attributes[d].nope == 1)", kExampleGpu, false,
       "no such key: nope"},
      {"device.attributes.exists(d, device.attributes[d].nope == 1) || true", kExampleGpu, true,
       ""},
  });
}

TEST(CelCost, RuntimeLimitIsNotAbsorbedByLogicalOperators) {
  const std::string big = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, x > 0)";
  const CompileOptions tight{.max_estimated_cost = 0, .cost_limit = 20};
  absl::StatusOr<bool> got = Eval(big + " || true", kExampleGpu, tight);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "operation cancelled: actual cost limit exceeded");
  got = Eval("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].exists(x, " + big + ")", kExampleGpu, tight);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "operation cancelled: actual cost limit exceeded");
  got = Eval(big, kExampleGpu, {.max_estimated_cost = 0, .cost_limit = 1000});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got);
}

TEST(CelCost, EstimateBoundsMacrosByTheApiLimits) {
  // One level over 32 attributes is cheap; four nested levels are 32^4 iterations.
  absl::StatusOr<CompiledSelector> one = CompiledSelector::Compile(kAttr + ".all(a, a.size() > 0)");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_GT(one->max_cost(), 32u);
  EXPECT_LT(one->max_cost(), 1000u);
  const std::string three =
      "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, a == c)))";
  absl::StatusOr<CompiledSelector> ok = CompiledSelector::Compile(three);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_GT(ok->max_cost(), 32u * 32u * 32u);
  const std::string four =
      "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, "
      "device.attributes.all(d, a == d))))";
  absl::StatusOr<CompiledSelector> refused = CompiledSelector::Compile(four);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              StartsWith("selector \"device.attributes.all(a, "));
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("too complex, exceeds cost limit"));
  // The estimate is a bound of the actual cost for a device within the API's limits.
  CelDeviceSpec full{"gpu.example.com", {}, {}};
  for (int i = 0; i < 32; ++i) full.attributes.push_back(I("d" + std::to_string(i) + "/x", i));
  absl::StatusOr<bool> got = Eval(three, full, {.cost_limit = ok->max_cost()});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(*got);
}

TEST(CelCost, ExpressionLengthLimit) {
  const std::string padded =
      "device.driver == 'x'" + std::string(kCelSelectorExpressionMaxLength - 20, ' ');
  ASSERT_EQ(padded.size(), kCelSelectorExpressionMaxLength);
  const CompileOptions validate{.max_length = kCelSelectorExpressionMaxLength};
  EXPECT_TRUE(CompiledSelector::Compile(padded, validate).ok());
  absl::StatusOr<CompiledSelector> s = CompiledSelector::Compile(padded + " ", validate);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("may not be more than 10240 bytes"));
  EXPECT_TRUE(CompiledSelector::Compile(padded + " ").ok());  // the scheduler's compile: any
}

TEST(CelDevice, AllowMultipleAllocationsIsTheDevicesField) {
  absl::StatusOr<CompiledSelector> s = CompiledSelector::Compile("device.allowMultipleAllocations");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->Matches(View(kExampleGpu)).value_or(true), false);
  resourceapi::Device shared;
  shared.name = "dev-0";
  shared.allow_multiple_allocations = true;
  absl::StatusOr<DeviceView> view = DeviceView::Build("gpu.example.com", shared);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(s->Matches(*view).value_or(false), true);
}

TEST(CelEnvironment, RefusesWhatItDoesNotSupportByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1.5 > 1.0", "unsupported double literal"},
      {"1u == 1u", "unsupported unsigned int literal"},
      {"b'x' == b'x'", "unsupported bytes literal"},
      {"null == null", "unsupported literal null"},
      {"timestamp('2024-01-01T00:00:00Z') > timestamp('2023-01-01T00:00:00Z')",
       "unsupported function \"timestamp\""},
      {"duration('1s') > duration('0s')", "unsupported function \"duration\""},
      {kAttr + ".?model.orValue('') == ''", "unsupported optional field selection \".?\""},
      {kAttr + "[?'model'].orValue('') == ''", "unsupported optional index \"[?\""},
      {"optional.of(1).hasValue()", "unsupported function \"optional.of\""},
      {"'%s'.format(['a']) == 'a'", "unsupported function \"format\""},
      {"strings.quote('a') == 'a'", "unsupported function \"strings.quote\""},
      {"url('https://x').getHost() == 'x'", "unsupported function \"url\""},
      {"ip('1.2.3.4').family() == 4", "unsupported function \"ip\""},
      {"cidr('10.0.0.0/8').containsIP('10.0.0.1')", "unsupported function \"cidr\""},
      {"quantity('1').add(quantity('1')).isInteger()", "unsupported function \"add\""},
      {"quantity('1').asApproximateFloat() > 0", "unsupported function \"asApproximateFloat\""},
      {"[1].transformList(i, v, v) == [1]", "unsupported function \"transformList\""},
      {"{'a': 1}.all(k, v, v == 1)", "unsupported two-variable comprehension all(k, v, ...)"},
      {"type(1) == int", "unsupported function \"type\""},
      {"'ab'.reverse() == 'ba'", "unsupported function \"reverse\""},
      {"semver('1.0.0', true).major() == 1", "found no matching overload for 'semver'"},
      {"'a'.matches('[')", "invalid regular expression"},
      {"[1].all(x, 1)", "all() predicate must be bool, not int"},
      {"1.all(x, x > 0)", "expression of type 'int' cannot be range of a comprehension"},
      {"device.driver.all(x, true)",
       "expression of type 'string' cannot be range of a "
       "comprehension"},
      {"[1].all(1, true)", "all() variable must be a simple name"},
      {"['a'].join(1) == ''",
       "found no matching overload for 'join' applied to "
       "'list(string).(int)'"},
      {"[1, 2].sum() + 'a' == 1",
       "found no matching overload for '_+_' applied to '(int, "
       "string)'"},
      {"{[1]: 1}.size() == 1", "unsupported map key type list(int)"},
      {"1 + true == 2", "found no matching overload for '_+_' applied to '(int, bool)'"},
  };
  for (const auto& [expression, want] : cases) {
    absl::StatusOr<CompiledSelector> s = CompiledSelector::Compile(expression);
    ASSERT_FALSE(s.ok()) << expression;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << expression;
    EXPECT_THAT(std::string(s.status().message()), StartsWith("selector \"")) << expression;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(want)) << expression;
  }
}

// The examples docs/dra.md shows as working all compile and match the example driver's device.
TEST(CelEnvironment, DocumentedExamplesMatch) {
  const CelDeviceSpec gpu{"gpu.example.com",
                          {S("model", "example-gpu"), I("index", 4), V("driverVersion", "1.0.0"),
                           S("uuid", "gpu-4"), I("numaNode", 1)},
                          {{"memory", "80Gi"}}};
  for (
      const char* e : {
          R"(device.driver == "gpu.example.com")",
          R"(device.attributes["gpu.example.com"].model.startsWith("example"))",
          R"(device.capacity["gpu.example.com"].memory.compareTo(quantity("8Gi")) >= 0)",
          R"(device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("0.9.0")))",
          R"("uuid" in device.attributes["gpu.example.com"])",
          R"(device.attributes["gpu.example.com"].index in [1, 3, 4])",
          R"(device.attributes["gpu.example.com"].exists(a, a.startsWith("numa")))",
          R"(size(device.attributes["gpu.example.com"].model) > 0 ? device.attributes["gpu.example.com"].index % 2 == 0 : false)",
      }) {
    absl::StatusOr<bool> m = Eval(e, gpu);
    ASSERT_TRUE(m.ok()) << e << ": " << m.status();
    EXPECT_TRUE(*m) << e;
  }
}

}  // namespace
}  // namespace kdp::manager::scheduling
