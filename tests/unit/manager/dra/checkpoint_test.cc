// The DRA manager checkpoint (`dra_manager_state`, kubelet 1.32+ layout): the checkpointer test
// cases of the kubelet (new checkpoint, one claim, several devices, two claims, bad checksum,
// invalid JSON, exact bytes on store), with test vectors written out here and their CRC-32
// computed by a bitwise implementation independent of zlib.
#include "manager/src/dra/checkpoint/checkpoint.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace kdp::manager::dra {
namespace {

using ::testing::HasSubstr;

// CRC-32/IEEE, reflected polynomial 0xEDB88320, one bit at a time.
uint32_t BitwiseCrc32(const std::string& bytes) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char c : bytes) {
    crc ^= c;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// The envelope around `data` as Go's json.Marshal writes Checkpoint{Data, Checksum}; `data` here
// holds no character that needs escaping other than '"' and '\'.
std::string Envelope(const std::string& data, uint32_t checksum) {
  std::string escaped;
  for (char c : data) {
    if (c == '"' || c == '\\') escaped.push_back('\\');
    escaped.push_back(c);
  }
  return absl::StrCat("{\"Data\":\"", escaped, "\",\"Checksum\":", checksum, "}");
}
std::string Envelope(const std::string& data) { return Envelope(data, BitwiseCrc32(data)); }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

constexpr char kHead[] =
    R"({"kind":"DRACheckpoint","apiVersion":"checkpoint.dra.kubelet.k8s.io/v1",)"
    R"("ClaimInfoStateList":)";

const std::string kEmptyData = absl::StrCat(kHead, "[]}");

const std::string kSingleClaimData = absl::StrCat(
    kHead, R"([{"ClaimUID":"067798be-454e-4be4-9047-1aa06aea63f7","ClaimName":"example",)"
           R"("Namespace":"default","PodUIDs":{"139cdb46-f989-4f17-9561-ca10cfb509a6":{}},)"
           R"("DriverState":{"test-driver.cdi.k8s.io":{"Devices":[{"PoolName":"worker-1",)"
           R"("DeviceName":"dev-1","RequestNames":["test request"],)"
           R"("CDIDeviceIDs":["example.com/example=cdi-example"]}]}}}]})");

const std::string kMultipleDevicesData = absl::StrCat(
    kHead, R"([{"ClaimUID":"067798be-454e-4be4-9047-1aa06aea63f7","ClaimName":"example",)"
           R"("Namespace":"default","PodUIDs":{"139cdb46-f989-4f17-9561-ca10cfb509a6":{}},)"
           R"("DriverState":{"test-driver.cdi.k8s.io":{"Devices":[{"PoolName":"worker-1",)"
           R"("DeviceName":"dev-1","RequestNames":["test request"],)"
           R"("CDIDeviceIDs":["example.com/example=cdi-example"]},{"PoolName":"worker-1",)"
           R"("DeviceName":"dev-2","RequestNames":null,"CDIDeviceIDs":null}]}}}]})");

const std::string kTwoClaimsData = absl::StrCat(
    kHead, R"([{"ClaimUID":"067798be-454e-4be4-9047-1aa06aea63f7","ClaimName":"example-1",)"
           R"("Namespace":"default","PodUIDs":{"139cdb46-f989-4f17-9561-ca10cfb509a6":{}},)"
           R"("DriverState":{"test-driver.cdi.k8s.io":{"Devices":[{"PoolName":"worker-1",)"
           R"("DeviceName":"dev-1","RequestNames":["test request"],)"
           R"("CDIDeviceIDs":["example.com/example=cdi-example"]}]}}},)"
           R"({"ClaimUID":"4cf8db2d-06c0-7d70-1a51-e59b25b2c16c","ClaimName":"example-2",)"
           R"("Namespace":"default","PodUIDs":{"139cdb46-f989-4f17-9561-ca10cfb509a6":{},)"
           R"("a-second-pod":{}},"DriverState":{"other.example.com":{"Devices":null},)"
           R"("test-driver.cdi.k8s.io":{"Devices":[{"PoolName":"worker-1","DeviceName":"dev-2",)"
           R"("RequestNames":["a","b"],"CDIDeviceIDs":["example.com/example=two"]}]}}}]})");

state::Device Dev1() {
  return {.pool_name = "worker-1",
          .device_name = "dev-1",
          .request_names = {"test request"},
          .cdi_device_ids = {"example.com/example=cdi-example"}};
}

state::ClaimInfoState SingleClaim() {
  return {.claim_uid = "067798be-454e-4be4-9047-1aa06aea63f7",
          .claim_name = "example",
          .namespace_ = "default",
          .pod_uids = {"139cdb46-f989-4f17-9561-ca10cfb509a6"},
          .driver_state = {{"test-driver.cdi.k8s.io", {.devices = {Dev1()}}}}};
}

state::ClaimInfoState MultipleDevices() {
  state::ClaimInfoState claim = SingleClaim();
  claim.driver_state["test-driver.cdi.k8s.io"].devices.push_back(
      {.pool_name = "worker-1", .device_name = "dev-2"});
  return claim;
}

std::vector<state::ClaimInfoState> TwoClaims() {
  state::ClaimInfoState first = SingleClaim();
  first.claim_name = "example-1";
  state::ClaimInfoState second = {
      .claim_uid = "4cf8db2d-06c0-7d70-1a51-e59b25b2c16c",
      .claim_name = "example-2",
      .namespace_ = "default",
      // Inserted out of order: the file has them sorted, as Go sorts map keys.
      .pod_uids = {"a-second-pod", "139cdb46-f989-4f17-9561-ca10cfb509a6"},
      .driver_state = {{"test-driver.cdi.k8s.io",
                        {.devices = {{.pool_name = "worker-1",
                                      .device_name = "dev-2",
                                      .request_names = {"a", "b"},
                                      .cdi_device_ids = {"example.com/example=two"}}}}},
                       {"other.example.com", {}}}};
  return {first, second};
}

TEST(DraCheckpoint, TheTestCrcIsTheStandardOne) {
  EXPECT_EQ(BitwiseCrc32("123456789"), 0xcbf43926u);  // CRC-32/ISO-HDLC check value
  EXPECT_EQ(Crc32Ieee("123456789"), 0xcbf43926u);
}

// ---- Encoding: byte-exact
// ------------------------------------------------------------------------

TEST(DraCheckpoint, EmptyStateIsAnEmptyList) {
  EXPECT_EQ(EncodeCheckpointData({}), kEmptyData);
  EXPECT_EQ(EncodeCheckpoint({}), Envelope(kEmptyData));
}

TEST(DraCheckpoint, SingleClaimIsByteExact) {
  EXPECT_EQ(EncodeCheckpointData({SingleClaim()}), kSingleClaimData);
  EXPECT_EQ(EncodeCheckpoint({SingleClaim()}), Envelope(kSingleClaimData));
}

TEST(DraCheckpoint, MultipleDevicesAreByteExactWithNullForEmptyLists) {
  EXPECT_EQ(EncodeCheckpoint({MultipleDevices()}), Envelope(kMultipleDevicesData));
}

TEST(DraCheckpoint, TwoClaimsAreByteExactWithSortedPodsAndDrivers) {
  EXPECT_EQ(EncodeCheckpoint(TwoClaims()), Envelope(kTwoClaimsData));
}

TEST(DraCheckpoint, HtmlCharactersAreEscapedAsGoDoesAndTwiceInTheEnvelope) {
  state::ClaimInfoState claim = SingleClaim();
  claim.claim_name = "a<b>&c";
  const std::string data = EncodeCheckpointData({claim});
  EXPECT_THAT(data, HasSubstr(R"("ClaimName":"a\u003cb\u003e\u0026c")"));
  const std::string file = EncodeCheckpoint({claim});
  EXPECT_THAT(file, HasSubstr(R"(\"ClaimName\":\"a\\u003cb\\u003e\\u0026c\")"));
  // The checksum covers the Data bytes, i.e. the single-escaped form.
  EXPECT_THAT(file, HasSubstr(absl::StrCat("\"Checksum\":", BitwiseCrc32(data), "}")));
  absl::StatusOr<std::vector<state::ClaimInfoState>> decoded = DecodeCheckpoint(file);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->at(0).claim_name, "a<b>&c");
}

TEST(DraCheckpoint, ShareIdIsWrittenOnlyWhenSetAfterDeviceName) {
  state::ClaimInfoState claim = SingleClaim();
  claim.driver_state["test-driver.cdi.k8s.io"].devices[0].share_id = "share-1";
  EXPECT_THAT(EncodeCheckpointData({claim}),
              HasSubstr(R"("DeviceName":"dev-1","ShareID":"share-1","RequestNames")"));
  absl::StatusOr<std::vector<state::ClaimInfoState>> decoded =
      DecodeCheckpoint(EncodeCheckpoint({claim}));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, std::vector<state::ClaimInfoState>{claim});
}

// ---- Decoding -----------------------------------------------------------------------------------

TEST(DraCheckpoint, RestoresEachVector) {
  struct Case {
    const char* name;
    std::string data;
    std::vector<state::ClaimInfoState> want;
  };
  for (const Case& c :
       {Case{"empty", kEmptyData, {}}, Case{"single-claim", kSingleClaimData, {SingleClaim()}},
        Case{"multiple-devices", kMultipleDevicesData, {MultipleDevices()}},
        Case{"two-claims", kTwoClaimsData, TwoClaims()}}) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::vector<state::ClaimInfoState>> decoded = DecodeCheckpoint(Envelope(c.data));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(*decoded, c.want);
  }
}

TEST(DraCheckpoint, IncorrectChecksumIsCorrupted) {
  const std::string file = Envelope(kSingleClaimData, BitwiseCrc32(kSingleClaimData) + 1);
  absl::StatusOr<std::vector<state::ClaimInfoState>> decoded = DecodeCheckpoint(file);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(decoded.status().message(), HasSubstr("checkpoint is corrupted"));
}

TEST(DraCheckpoint, OneChangedByteOfDataIsCorrupted) {
  std::string file = Envelope(kSingleClaimData);
  file[file.find("dev-1") + 4] = '7';
  absl::StatusOr<std::vector<state::ClaimInfoState>> decoded = DecodeCheckpoint(file);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(decoded.status().message(), HasSubstr("checkpoint is corrupted"));
}

TEST(DraCheckpoint, InvalidJsonIsCorrupted) {
  std::string file = Envelope(kSingleClaimData);
  file.resize(file.size() - 10);
  absl::StatusOr<std::vector<state::ClaimInfoState>> decoded = DecodeCheckpoint(file);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(decoded.status().message(), HasSubstr("checkpoint is corrupted"));
}

TEST(DraCheckpoint, TheChecksumIsVerifiedBeforeDataIsParsed) {
  const std::string truncated = kSingleClaimData.substr(0, 40);
  // Bad checksum over invalid Data: the checksum is what is reported.
  absl::StatusOr<std::vector<state::ClaimInfoState>> bad_sum =
      DecodeCheckpoint(Envelope(truncated, 1));
  EXPECT_THAT(bad_sum.status().message(), HasSubstr("stored checksum 1"));
  // Right checksum over invalid Data: Data is parsed and rejected.
  absl::StatusOr<std::vector<state::ClaimInfoState>> bad_data =
      DecodeCheckpoint(Envelope(truncated));
  EXPECT_EQ(bad_data.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad_data.status().message(), HasSubstr("Data is not valid JSON"));
}

TEST(DraCheckpoint, ReadsTheEntriesKeyOfTheIntermediateLayout) {
  std::string data = kSingleClaimData;
  data.replace(data.find("ClaimInfoStateList"), 18, "Entries");
  absl::StatusOr<CheckpointData> parsed = DecodeCheckpointData(data);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->list_key, "Entries");
  EXPECT_EQ(parsed->kind, "DRACheckpoint");
  EXPECT_EQ(parsed->claims, std::vector<state::ClaimInfoState>{SingleClaim()});
  absl::StatusOr<std::vector<state::ClaimInfoState>> decoded = DecodeCheckpoint(Envelope(data));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, std::vector<state::ClaimInfoState>{SingleClaim()});
}

TEST(DraCheckpoint, ReadsAsGoDoesNullsAndCaseInsensitiveNames) {
  const std::string data =
      absl::StrCat(kHead, R"([{"claimuid":"u","ClaimName":"n","Namespace":null,"PodUIDs":null,)"
                          R"("DriverState":{"d":{}}}]})");
  absl::StatusOr<CheckpointData> parsed = DecodeCheckpointData(data);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->claims.size(), 1u);
  EXPECT_EQ(parsed->claims[0].claim_uid, "u");
  EXPECT_EQ(parsed->claims[0].namespace_, "");
  EXPECT_TRUE(parsed->claims[0].pod_uids.empty());
  EXPECT_EQ(parsed->claims[0].driver_state.count("d"), 1u);
}

TEST(DraCheckpoint, WrongTypesInDataAreRejected) {
  for (const std::string& entry :
       {std::string(R"([{"ClaimUID":1}])"), std::string(R"([{"PodUIDs":["a"]}])"),
        std::string(R"([{"DriverState":{"d":{"Devices":[{"CDIDeviceIDs":[1]}]}}}])"),
        std::string(R"({"x":1})")}) {
    SCOPED_TRACE(entry);
    EXPECT_EQ(DecodeCheckpointData(absl::StrCat(kHead, entry, "}")).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(DraCheckpoint, TheOldSpewFormatIsReportedAsUnsupported) {
  const std::string old =
      R"({"version":"v1","entries":[{"ClaimUID":"u","ClaimName":"n","Namespace":"d",)"
      R"("PodUIDs":{"p":{}},"DriverState":{}}],"checksum":1234})";
  absl::StatusOr<std::vector<state::ClaimInfoState>> decoded = DecodeCheckpoint(old);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(decoded.status().message(), HasSubstr("<= 1.31"));
  EXPECT_THAT(decoded.status().message(), HasSubstr("remove the file"));
}

TEST(DraCheckpoint, ADeviceManagerCheckpointIsNotADraCheckpoint) {
  absl::StatusOr<CheckpointEnvelope> envelope = DecodeCheckpointEnvelope(
      R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":{}},"Checksum":3467439661})");
  EXPECT_EQ(envelope.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(envelope.status().message(), HasSubstr("no \"Data\" string"));
}

// ---- Checkpointer (the file) --------------------------------------------------------------------

TEST(DraCheckpointer, RejectsAnEmptyDirectoryOrName) {
  testing::TempDir dir;
  EXPECT_EQ(Checkpointer::Create("", kCheckpointFileName).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Checkpointer::Create(dir.Path("subdir"), "").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Checkpointer::Create(dir.path(), "a/b").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DraCheckpointer, AMissingFileIsCreatedEmpty) {
  testing::TempDir dir;
  absl::StatusOr<std::unique_ptr<Checkpointer>> checkpointer =
      Checkpointer::Create(dir.Path("kubelet"));
  ASSERT_TRUE(checkpointer.ok()) << checkpointer.status();
  EXPECT_EQ((*checkpointer)->path(), dir.Path("kubelet") + "/dra_manager_state");
  absl::StatusOr<std::vector<state::ClaimInfoState>> claims = (*checkpointer)->GetOrCreate();
  ASSERT_TRUE(claims.ok()) << claims.status();
  EXPECT_TRUE(claims->empty());
  EXPECT_EQ(ReadAll((*checkpointer)->path()), Envelope(kEmptyData));
}

TEST(DraCheckpointer, StoreWritesTheExactBytesAndGetReadsThemBack) {
  testing::TempDir dir;
  absl::StatusOr<std::unique_ptr<Checkpointer>> checkpointer = Checkpointer::Create(dir.path());
  ASSERT_TRUE(checkpointer.ok()) << checkpointer.status();
  struct Case {
    const char* name;
    std::vector<state::ClaimInfoState> claims;
    std::string data;
  };
  for (const Case& c : {Case{"single-claim", {SingleClaim()}, kSingleClaimData},
                        Case{"multiple-devices", {MultipleDevices()}, kMultipleDevicesData},
                        Case{"two-claims", TwoClaims(), kTwoClaimsData}}) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE((*checkpointer)->Store(c.claims).ok());
    EXPECT_EQ(ReadAll((*checkpointer)->path()), Envelope(c.data));
    absl::StatusOr<std::vector<state::ClaimInfoState>> back = (*checkpointer)->GetOrCreate();
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, c.claims);
  }
}

TEST(DraCheckpointer, ACorruptedFileIsAnErrorNamingTheCheckpoint) {
  testing::TempDir dir;
  std::ofstream(dir.Path(kCheckpointFileName))
      << Envelope(kSingleClaimData, BitwiseCrc32(kSingleClaimData) ^ 1);
  absl::StatusOr<std::unique_ptr<Checkpointer>> checkpointer = Checkpointer::Create(dir.path());
  ASSERT_TRUE(checkpointer.ok()) << checkpointer.status();
  absl::StatusOr<std::vector<state::ClaimInfoState>> claims = (*checkpointer)->GetOrCreate();
  EXPECT_EQ(claims.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(claims.status().message(),
              HasSubstr("failed to get checkpoint dra_manager_state: checkpoint is corrupted"));
  // The file is left alone for the operator to look at.
  EXPECT_EQ(ReadAll(dir.Path(kCheckpointFileName)),
            Envelope(kSingleClaimData, BitwiseCrc32(kSingleClaimData) ^ 1));
}

}  // namespace
}  // namespace kdp::manager::dra
