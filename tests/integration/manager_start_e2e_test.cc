// kdp-manager's start-up in a kubelet root that already has files in it.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "common/unix_socket.h"
#include "tests/integration/e2e_fixture.h"

namespace kdp::testing {
namespace {

// Leaves a bound unix socket file behind, as a plugin that died would.
void MakeStaleSocket(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ::close(fd);
  ASSERT_TRUE(IsSocket(path));
}

TEST_F(E2ETest, StartRemovesStaleSocketsAndKeepsEverythingElse) {
  ASSERT_EQ(::mkdir(PluginsDir().c_str(), 0750), 0);
  MakeStaleSocket(PluginsDir() + "/old-plugin.sock");
  MakeStaleSocket(PluginsDir() + "/kubelet.sock");
  const std::string regular_file = PluginsDir() + "/notes.txt";
  std::ofstream(regular_file) << "kept";
  ASSERT_EQ(::mkdir((PluginsDir() + "/subdir").c_str(), 0750), 0);

  StartManager();
  EXPECT_FALSE(IsSocket(PluginsDir() + "/old-plugin.sock"));
  EXPECT_TRUE(IsSocket(KubeletSocket())) << "listening on a fresh kubelet.sock";
  struct stat st {};
  EXPECT_EQ(::stat(regular_file.c_str(), &st), 0) << "regular files stay";
  EXPECT_EQ(::stat((PluginsDir() + "/subdir").c_str(), &st), 0) << "directories stay";
  StopManager();
  EXPECT_FALSE(IsSocket(KubeletSocket())) << "a clean stop removes kubelet.sock";
}

TEST_F(E2ETest, ASecondManagerOnTheSameRootRefusesToStart) {
  StartManager();
  absl::StatusOr<CommandResult> second =
      RunCommand({KDP_MANAGER_BIN, "--kubelet-root", Root()}, absl::Seconds(20));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->exit_code, 1);
  EXPECT_THAT(second->out + second->err,
              ::testing::HasSubstr("Another kdp-manager is running on this kubelet root"));
  EXPECT_THAT(second->out + second->err,
              ::testing::HasSubstr(absl::StrCat("pid=\"", manager_->pid())));
  EXPECT_EQ(Kdpctl({"status"}).exit_code, 0) << "the first one keeps serving";
  StopManager();
}

}  // namespace
}  // namespace kdp::testing
