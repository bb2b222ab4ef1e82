#include "rendezvous/rendezvous_book.h"

#include <gtest/gtest.h>

#include "testing/rendezvous_helpers.h"

namespace kdist {
namespace {

using namespace kdist::testing;  // NOLINT: the book tests' shared agents and jobs

TEST(RendezvousBook, NodeNamesFollowAdmissionThenTheRoster) {
  RendezvousBook book(Options(2, 3), Nanos(0));
  (void)Join(book, MakeAgent(1, "b", "10.0.0.2"), seconds(1));
  (void)Join(book, MakeAgent(2, "a", "10.0.0.1"), seconds(2));  // on the rendezvous's machine
  EXPECT_EQ(book.NodeNames(), (std::vector<std::string>{"b", "a"}));
  (void)book.Tick(seconds(12));  // the last call: the job forms, node 0 first
  EXPECT_EQ(book.NodeNames(), (std::vector<std::string>{"a", "b"}));
}

TEST(RendezvousBook, AnAgentsNonceIsKnownWhileItsNodeIsLive) {
  RendezvousBook book(Options(2, 2), Nanos(0));
  Agent a = MakeAgent(1, "a", "10.0.0.1");
  (void)Join(book, a, seconds(1));
  ASSERT_TRUE(book.AgentNonce(a.connection).has_value());
  EXPECT_TRUE(*book.AgentNonce(a.connection) == a.hello.nonce);
  EXPECT_FALSE(book.AgentNonce(99).has_value());
  (void)book.Leave(a.connection, seconds(2));
  EXPECT_FALSE(book.AgentNonce(a.connection).has_value());
}

TEST(RendezvousBook, TheEndReachesEveryLiveNodeWithOneStatus) {
  RendezvousBook book(Options(3, 3), Nanos(0));
  (void)Join(book, MakeAgent(1, "a", "10.0.0.1"), seconds(1));
  (void)Join(book, MakeAgent(2, "b", "10.0.0.2"), seconds(2));
  const auto ends = OfKind(book.Tick(seconds(300)), NodeReplyKind::kEnd);
  ASSERT_EQ(ends.size(), 2u);
  for (const NodeMessage& m : ends) EXPECT_EQ(m.reply.exit_status, kExitNotEnoughNodes);
  EXPECT_EQ(book.phase(), RendezvousBook::Phase::kEnded);
}

}  // namespace
}  // namespace kdist
