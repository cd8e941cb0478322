// The modes of what kdp creates do not depend on the umask: each test runs with umask 0 (the
// widest) and stats the real files. Sockets served through kdp are 0600 (chmod right after gRPC
// binds them), directories under the kubelet root 0750 (kdp/ 0700), state and checkpoint files
// 0600, the kubeconfig 0600. CDI specs are the one deliberate exception: container runtimes read
// them, so they are 0644 in a 0755 directory (never writable by others).
// tests/fault/security_e2e_test.cc checks the same on a running manager, plugin and driver.
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "common/durable_file.h"
#include "common/grpc_server.h"
#include "common/path_safety.h"
#include "common/unix_socket.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/cdi.h"
#include "manager/src/controlplane/resourceapi/kubeconfig.h"
#include "manager/src/devicemanager/registration_server.h"
#include "manager/src/dra/checkpoint/checkpoint.h"
#include "sdk/src/dra/checkpoint.h"
#include "tests/testing/temp_dir.h"

namespace kdp {
namespace {

// Sets the umask for the test's lifetime (it is process-wide: the tests of this file run one at
// a time, and nothing else in the process creates files meanwhile).
class WidestUmask : public ::testing::Test {
 protected:
  void SetUp() override { previous_ = ::umask(0); }
  void TearDown() override { ::umask(previous_); }

  static mode_t ModeOf(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  }
  static bool IsSocketAt(const std::string& path) { return IsSocket(path); }

  testing::TempDir dir_;

 private:
  mode_t previous_ = 0;
};

using FileModes = WidestUmask;

TEST_F(FileModes, DirectoriesAre0750WhateverTheUmask) {
  const std::string deep = dir_.Path("root/a/b");
  ASSERT_TRUE(MakeDirectories(deep, 0750).ok());
  EXPECT_EQ(ModeOf(dir_.Path("root")), 0750u);
  EXPECT_EQ(ModeOf(dir_.Path("root/a")), 0750u);
  EXPECT_EQ(ModeOf(deep), 0750u);
}

TEST_F(FileModes, DurableFilesAre0600) {
  const std::string path = dir_.Path("state");
  ASSERT_TRUE(WriteFileDurably(path, "x").ok());
  EXPECT_EQ(ModeOf(path), 0600u);
}

TEST_F(FileModes, ServedSocketsAre0600) {
  v1beta1::Registration::Service service;
  const std::string socket = dir_.Path("s.sock");
  auto server = ServeOnUnixSocket(socket, &service);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(IsSocketAt(socket));
  EXPECT_EQ(ModeOf(socket), kSocketMode);
  EXPECT_EQ(kSocketMode, 0600u);
  (*server)->Shutdown();
}

TEST_F(FileModes, DevicePluginRegistrationSocketAndDirectory) {
  manager::RegistrationServer registration(dir_.Path("root/device-plugins"), nullptr);
  ASSERT_TRUE(registration.Start().ok());
  EXPECT_EQ(ModeOf(dir_.Path("root")), 0750u);
  EXPECT_EQ(ModeOf(dir_.Path("root/device-plugins")), 0750u);
  EXPECT_EQ(ModeOf(registration.socket_path()), 0600u);
  registration.Stop();
}

TEST_F(FileModes, KubeconfigIs0600InA0700Directory) {
  // Even when kdp/ existed with a wide mode (an older version, a hand-made directory).
  ASSERT_EQ(::mkdir(dir_.Path("kdp").c_str(), 0777), 0);
  absl::StatusOr<std::string> path =
      manager::resourceapi::WriteKubeconfig(dir_.path(), 12345, "ca", std::string(64, 'a'));
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(ModeOf(dir_.Path("kdp")), 0700u);
  EXPECT_EQ(ModeOf(*path), 0600u);
}

TEST_F(FileModes, DraManagerCheckpointIs0600InA0750Directory) {
  auto checkpointer = manager::dra::Checkpointer::Create(dir_.Path("kubelet"));
  ASSERT_TRUE(checkpointer.ok()) << checkpointer.status();
  ASSERT_TRUE((*checkpointer)->Store({}).ok());
  EXPECT_EQ(ModeOf(dir_.Path("kubelet")), 0750u);
  EXPECT_EQ(ModeOf((*checkpointer)->path()), 0600u);
}

TEST_F(FileModes, SdkDriverCheckpointIs0600) {
  internal::DraCheckpoint checkpoint(dir_.Path("prepared-claims.json"), "gpu.example.com");
  ASSERT_TRUE(checkpoint.Store({}).ok());
  EXPECT_EQ(ModeOf(checkpoint.path()), 0600u);
  ASSERT_TRUE(checkpoint.Load().ok());  // the next write goes to the second slot
  ASSERT_TRUE(checkpoint.Store({}).ok());
  EXPECT_EQ(ModeOf(checkpoint.SlotPath(1)), 0600u);
}

TEST_F(FileModes, CdiSpecsAreReadableByRuntimesButNeverWritableByOthers) {
  cdi::Spec spec;
  spec.cdi_version = "0.5.0";
  spec.kind = "example.com/gpu";
  spec.devices = {{.name = "gpu0", .annotations = {}, .container_edits = {.env = {"GPU=0"}}}};
  ASSERT_TRUE(cdi::WriteSpec(dir_.Path("cdi"), "example.com-gpu_uid-1", spec).ok());
  EXPECT_EQ(ModeOf(dir_.Path("cdi")), 0755u);
  EXPECT_EQ(ModeOf(dir_.Path("cdi/example.com-gpu_uid-1.json")), 0644u);
}

}  // namespace
}  // namespace kdp
