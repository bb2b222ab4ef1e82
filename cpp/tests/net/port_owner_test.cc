#include "net/port_owner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "net/socket.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

constexpr char kTcp[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
    "inode\n"
    "   0: 0100007F:1388 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 "
    "777 1 00000000df13e1b6 100 0 0 10 0\n"
    "   1: 020200C0:A0FA 507100CB:01BB 01 00000000:00000000 00:00000000 00000000     0        0 "
    "23227 1 00000000c4923d68 20 4 1 13 -1\n"
    "   2: garbage line\n"
    "   3: 0100007F:ZZZZ 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 5 1\n";

constexpr char kTcp6[] =
    "  sl  local_address                         remote_address                        st "
    "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 00000000000000000000000000000000:1389 00000000000000000000000000000000:0000 0A "
    "00000000:00000000 00:00000000 00000000     0        0 888 1 0000000000000000 100 0 0 10 0\n"
    "   1: 0000000000000000FFFF00000100007F:A9DD 0000000000000000FFFF00000100007F:C88A 06 "
    "00000000:00000000 03:00000249 00000000     0        0 0 3 0000000040b62d81\n";

TEST(PortOwner, ParsesIpv4Table) {
  const std::vector<TcpSocketEntry> entries = ParseProcNetTcp(kTcp);
  ASSERT_EQ(entries.size(), size_t{2});
  EXPECT_EQ(entries[0].local_address, std::string("127.0.0.1"));
  EXPECT_EQ(entries[0].local_port, uint16_t{5000});
  EXPECT_EQ(entries[0].state, kTcpListen);
  EXPECT_EQ(entries[0].uid, uint32_t{1000});
  EXPECT_EQ(entries[0].inode, uint64_t{777});
  EXPECT_EQ(entries[1].local_address, std::string("192.0.2.2"));
  EXPECT_EQ(entries[1].state, 1);
}

TEST(PortOwner, ParsesIpv6Table) {
  const std::vector<TcpSocketEntry> entries = ParseProcNetTcp(kTcp6);
  ASSERT_EQ(entries.size(), size_t{2});
  EXPECT_EQ(entries[0].local_address, std::string("::"));
  EXPECT_EQ(entries[0].local_port, uint16_t{5001});
  EXPECT_EQ(entries[0].inode, uint64_t{888});
  EXPECT_EQ(entries[1].local_address, std::string("::ffff:127.0.0.1"));
}

TEST(PortOwner, SurvivesJunk) {
  EXPECT_EQ(ParseProcNetTcp("").size(), size_t{0});
  EXPECT_EQ(ParseProcNetTcp(std::string(1000, ':')).size(), size_t{0});
  EXPECT_EQ(ParseProcNetTcp("0: 1:2 3 4 5 6 7 8 9 10").size(), size_t{0});
}

TEST(PortOwner, ParsesSocketLinks) {
  EXPECT_EQ(*ParseSocketLink("socket:[12345]"), uint64_t{12345});
  EXPECT_FALSE(ParseSocketLink("pipe:[12345]").has_value());
  EXPECT_FALSE(ParseSocketLink("socket:[]").has_value());
  EXPECT_FALSE(ParseSocketLink("socket:[12a]").has_value());
  EXPECT_FALSE(ParseSocketLink("/dev/null").has_value());
}

// A /proc look-alike in a temporary directory.
struct FakeProc {
  std::string root;
  FakeProc() {
    char pattern[] = "/tmp/kdist-proc-XXXXXX";
    root = mkdtemp(pattern);
    mkdir((root + "/net").c_str(), 0700);
    std::ofstream(root + "/net/tcp") << kTcp;
    std::ofstream(root + "/net/tcp6") << kTcp6;
    for (const char* pid : {"1", "4242"}) {
      mkdir((root + "/" + pid).c_str(), 0700);
      mkdir((root + "/" + pid + "/fd").c_str(), 0700);
    }
    symlink("pipe:[1]", (root + "/1/fd/0").c_str());
    symlink("socket:[777]", (root + "/4242/fd/7").c_str());
    std::ofstream(root + "/4242/comm") << "python3\n";
    mkdir((root + "/self").c_str(), 0700);
  }
  ~FakeProc() {
    const std::string command = "rm -rf '" + root + "'";
    if (std::system(command.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", root.c_str());
  }
};

TEST(PortOwner, FindsThePidInAFakeProc) {
  FakeProc proc;
  RealClock clock;
  auto owner = FindPortOwner(5000, clock, std::chrono::seconds(2), proc.root);
  ASSERT_TRUE(owner.has_value());
  EXPECT_EQ(owner->pid, int64_t{4242});
  EXPECT_EQ(owner->command, std::string("python3"));
  EXPECT_EQ(DescribePortOwner(owner),
                  std::string("held by pid 4242 (\"python3\"), listening on 127.0.0.1:5000"));
  // Listening, but no visible process holds the inode.
  auto hidden = FindPortOwner(5001, clock, std::chrono::seconds(2), proc.root);
  ASSERT_TRUE(hidden.has_value());
  EXPECT_EQ(hidden->pid, int64_t{0});
  EXPECT_EQ(DescribePortOwner(hidden),
                  std::string("held by a process of uid 0 that this user cannot inspect, "
                              "listening on [::]:5001"));
  EXPECT_FALSE(FindPortOwner(6000, clock, std::chrono::seconds(2), proc.root).has_value());
  EXPECT_EQ(DescribePortOwner(std::nullopt), std::string());
}

TEST(PortOwner, NoProcMeansNoOwner) {
  RealClock clock;
  EXPECT_FALSE(
      FindPortOwner(5000, clock, std::chrono::seconds(1), "/nonexistent-kdist").has_value());
}

TEST(PortOwner, FindsThisProcessOnTheRealProc) {
  Result<Listener> listener = ListenOnAllInterfaces(0, 4);
  KDIST_ASSERT_OK(listener);
  RealClock clock;
  auto owner = FindPortOwner(listener->port, clock, std::chrono::seconds(2));
  ASSERT_TRUE(owner.has_value());
  EXPECT_EQ(owner->pid, static_cast<int64_t>(getpid()));
  EXPECT_TRUE(DescribePortOwner(owner).find("pid " + std::to_string(getpid())) !=
                    std::string::npos);
}

}  // namespace
}  // namespace kdist
