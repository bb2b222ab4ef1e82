#include "roll_call/coordinator.h"

#include <arpa/inet.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include "roll_call/worker.h"
#include "testing/roll_call_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FastOptions;
using testing::Loopback;
using testing::RawClient;
using testing::TestHello;

// More than process 0 ever sends one connection: Read() until it ends.
constexpr size_t kEverything = 1 << 20;

// Process 0 on a free port, run on its own thread.
class CoordinatorThread {
 public:
  CoordinatorThread(int64_t n, RollCallOptions options, std::string token = "")
      : options_(std::move(options)), result_(Internal("not finished")) {
    Result<Listener> listener = BindCoordinatorPort(0, options_, clock_);
    if (!listener.ok()) return;
    port_ = listener->port;
    own_ = TestHello(0, n, port_);
    own_.token = std::move(token);
    thread_ = std::thread([this, l = std::move(listener).value()]() mutable {
      result_ = RunCoordinatorOn(std::move(l), own_, shared_, options_, clock_);
    });
  }
  ~CoordinatorThread() { Join(); }
  uint16_t port() const { return port_; }
  const Hello& own() const { return own_; }
  const JobShared& shared() const { return shared_; }
  Result<RollCallSummary>& Join() {
    if (thread_.joinable()) thread_.join();
    return result_;
  }

 private:
  RealClock clock_;
  RollCallOptions options_;
  uint16_t port_ = 0;
  Hello own_;
  JobShared shared_{20260427};
  Result<RollCallSummary> result_;
  std::thread thread_;
};

// A worker on its own thread.
class WorkerThread {
 public:
  WorkerThread(Hello hello, uint16_t port, RollCallOptions options)
      : hello_(std::move(hello)), options_(std::move(options)), result_(Internal("not finished")) {
    thread_ = std::thread([this, port] {
      RealClock clock;
      result_ = RunWorker(hello_, Loopback(port), options_, clock);
    });
  }
  ~WorkerThread() { Join(); }
  Result<WorkerResult>& Join() {
    if (thread_.joinable()) thread_.join();
    return result_;
  }

 private:
  Hello hello_;
  RollCallOptions options_;
  Result<WorkerResult> result_;
  std::thread thread_;
};

// Whether a plain socket without SO_REUSEADDR can bind the port: no
// listener and no TIME_WAIT is left on it.
bool PlainBindWorks(uint16_t port) {
  Fd fd(socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
}

// What JAX's gRPC service does: bind with SO_REUSEADDR, and listen.
bool ReuseAddressListenWorks(uint16_t port) {
  Fd fd(socket(AF_INET, SOCK_STREAM, 0));
  const int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  return bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
         listen(fd.get(), 16) == 0;
}

// After "go" the members' connections close in the background: the port is
// clean (a plain bind works) once the workers have closed, within the grace.
bool PlainBindWorksWithin(uint16_t port, Nanos within) {
  RealClock clock;
  const Nanos until = clock.Now() + within;
  while (!PlainBindWorks(port)) {
    if (clock.Now() >= until) return false;
    usleep(5 * 1000);
  }
  return true;
}

TEST(Coordinator, JaxsServiceCanBindTheMomentTheRollCallReturns) {
  RollCallOptions options = FastOptions(milliseconds(5000));
  options.close_grace = seconds(60);  // longer than the test: a wait for it would show
  CoordinatorThread coordinator(3, options);
  // A member that is slow to read "go" and close keeps its connection open;
  // process 0 returns (to start JAX) without waiting for it.
  RawClient slow(coordinator.port());
  ASSERT_TRUE(slow.Send(EncodeHello(TestHello(1, 3, coordinator.port()))));
  WorkerThread worker(TestHello(2, 3, coordinator.port()), coordinator.port(),
                      FastOptions(milliseconds(5000)));
  KDIST_ASSERT_OK(coordinator.Join());
  EXPECT_TRUE(ReuseAddressListenWorks(coordinator.port()));
  KDIST_EXPECT_OK(worker.Join());
  Result<Reply> go = slow.ReadVerdict(milliseconds(5000));
  KDIST_ASSERT_OK(go);
  EXPECT_TRUE(go->type == FrameType::kGo);
  IoState state = IoState::kWouldBlock;
  slow.Read(kEverything, milliseconds(200), &state);
  EXPECT_TRUE(state != IoState::kError && state != IoState::kEof);  // still open
}

TEST(Coordinator, EveryoneJoinsAndThePortIsLeftClean) {
  CoordinatorThread coordinator(4, FastOptions(milliseconds(5000)));
  ASSERT_TRUE(coordinator.port() != 0);
  std::vector<std::unique_ptr<WorkerThread>> workers;
  for (int64_t id = 1; id < 4; ++id) {
    workers.push_back(std::make_unique<WorkerThread>(TestHello(id, 4, coordinator.port()),
                                                     coordinator.port(),
                                                     FastOptions(milliseconds(5000))));
  }
  Result<RollCallSummary>& summary = coordinator.Join();
  KDIST_ASSERT_OK(summary);
  EXPECT_EQ(summary->members.size(), size_t{3});
  EXPECT_EQ(summary->members[2].host, std::string("host-3"));
  EXPECT_EQ(summary->dropped, int64_t{0});
  for (auto& w : workers) {
    Result<WorkerResult>& r = w->Join();
    KDIST_ASSERT_OK(r);
    EXPECT_EQ(r->go.host, std::string("host-0"));
    EXPECT_EQ(r->go.pid, int64_t{50000});
    EXPECT_EQ(r->connected_to.port(), coordinator.port());
  }
  EXPECT_TRUE(PlainBindWorksWithin(coordinator.port(), seconds(5)));
}

TEST(Coordinator, DeadlineNamesWhoIsMissingAndTellsTheWaiting) {
  CoordinatorThread coordinator(3, FastOptions(milliseconds(600)));
  WorkerThread one(TestHello(1, 3, coordinator.port()), coordinator.port(),
                   FastOptions(milliseconds(3000)));
  Result<RollCallSummary>& summary = coordinator.Join();
  KDIST_EXPECT_ERROR(summary, StatusCode::kDeadlineExceeded,
                     "the roll call timed out after 0.6 s with 2 of 3 joined; missing process "
                     "ids [2]");
  // The waiting worker hears process 0's verdict, not its own later deadline.
  KDIST_EXPECT_ERROR(one.Join(), StatusCode::kDeadlineExceeded, "missing process ids [2]");
  KDIST_EXPECT_ERROR(one.Join(), StatusCode::kDeadlineExceeded,
                     "process 0 (host host-0, pid 50000) at 127.0.0.1:");
  EXPECT_TRUE(PlainBindWorks(coordinator.port()));
}

TEST(Coordinator, AloneItTimesOutNamingOneOfTwo) {
  CoordinatorThread coordinator(2, FastOptions(milliseconds(200)));
  KDIST_EXPECT_ERROR(coordinator.Join(), StatusCode::kDeadlineExceeded,
                     "1 of 2 joined; missing process ids [1]");
  EXPECT_TRUE(PlainBindWorks(coordinator.port()));
}

TEST(Coordinator, GarbageIsDroppedWithoutStallingTheRollCall) {
  RollCallOptions options = FastOptions(milliseconds(5000));
  CoordinatorThread coordinator(2, options);
  const uint16_t port = coordinator.port();
  RawClient http(port), noise(port), silent(port), huge(port), quitter(port);
  ASSERT_TRUE(http.connected() && noise.connected() && silent.connected());
  EXPECT_TRUE(http.Send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  EXPECT_TRUE(noise.Send(std::string("\x00\xff\x13\x37 random", 11)));
  EXPECT_TRUE(huge.Send(std::string("KDRV\x00\x01\x00\x01\xff\xff\xff\xff", 12)));
  quitter.Close();
  // Garbage connections are reset at once.
  IoState state;
  http.Read(kEverything, milliseconds(2000), &state);  // the challenge, then the reset
  EXPECT_TRUE(state == IoState::kError || state == IoState::kEof);
  noise.Read(kEverything, milliseconds(2000), &state);  // the challenge, then the reset
  EXPECT_TRUE(state == IoState::kError || state == IoState::kEof);
  huge.Read(kEverything, milliseconds(2000), &state);  // the challenge, then the reset
  EXPECT_TRUE(state == IoState::kError || state == IoState::kEof);

  WorkerThread worker(TestHello(1, 2, port), port, FastOptions(milliseconds(5000)));
  Result<RollCallSummary>& summary = coordinator.Join();
  KDIST_ASSERT_OK(summary);
  EXPECT_GE(summary->dropped, int64_t{3});
  KDIST_EXPECT_OK(worker.Join());
  // The silent connection never said who it is: reset when the roll call ended.
  silent.Read(kEverything, milliseconds(2000), &state);  // the challenge, then the reset
  EXPECT_TRUE(state == IoState::kError);
  EXPECT_TRUE(PlainBindWorksWithin(port, seconds(5)));
}

TEST(Coordinator, AJaxClientWithoutPreflightIsNamedAsSuch) {
  CoordinatorThread coordinator(2, FastOptions(milliseconds(300)));
  RawClient grpc(coordinator.port());
  ASSERT_TRUE(grpc.Send("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
  KDIST_EXPECT_ERROR(coordinator.Join(), StatusCode::kDeadlineExceeded,
                     "a gRPC client: a process that starts JAX without the roll call");
}

TEST(Coordinator, SilentConnectionsAreDroppedAtTheHelloDeadline) {
  RollCallOptions options = FastOptions(milliseconds(5000));
  options.hello_timeout = milliseconds(150);
  CoordinatorThread coordinator(2, options);
  RawClient silent(coordinator.port());
  RealClock clock;
  const Nanos start = clock.Now();
  KDIST_EXPECT_OK(silent.ReadChallenge(milliseconds(3000)));  // sent at once
  IoState state;
  silent.Read(1, milliseconds(3000), &state);
  const Nanos took = clock.Now() - start;
  // Reset (not closed) long before the 5 s roll call ends, and not before the
  // hello deadline.
  EXPECT_TRUE(state == IoState::kError);
  EXPECT_GE(took.count(), Nanos(milliseconds(100)).count());
  WorkerThread worker(TestHello(1, 2, coordinator.port()), coordinator.port(),
                      FastOptions(milliseconds(5000)));
  KDIST_EXPECT_OK(coordinator.Join());
  KDIST_EXPECT_OK(worker.Join());
}

TEST(Coordinator, PendingConnectionsAreBounded) {
  RollCallOptions options = FastOptions(milliseconds(5000));
  options.max_pending = 2;
  options.hello_timeout = milliseconds(200);
  CoordinatorThread coordinator(2, options);
  std::vector<std::unique_ptr<RawClient>> silent;
  for (int i = 0; i < 6; ++i) silent.push_back(std::make_unique<RawClient>(coordinator.port()));
  WorkerThread worker(TestHello(1, 2, coordinator.port()), coordinator.port(),
                      FastOptions(milliseconds(5000)));
  // The worker waits in the backlog until silent ones expire, then joins.
  KDIST_ASSERT_OK(coordinator.Join());
  KDIST_EXPECT_OK(worker.Join());
  EXPECT_GE(coordinator.Join()->dropped, int64_t{2});
}

TEST(Coordinator, DuplicateIdsFailEveryoneNamingBothClaimants) {
  CoordinatorThread coordinator(3, FastOptions(milliseconds(5000)));
  Hello a = TestHello(1, 3, coordinator.port());
  Hello b = TestHello(1, 3, coordinator.port());
  b.host = "other-host";
  b.pid = 777;
  WorkerThread first(a, coordinator.port(), FastOptions(milliseconds(5000)));
  WorkerThread second(b, coordinator.port(), FastOptions(milliseconds(5000)));
  // Whichever arrives first, the message names both.
  Result<RollCallSummary>& summary = coordinator.Join();
  KDIST_EXPECT_ERROR(summary, StatusCode::kFailedPrecondition, "process id 1 is claimed twice");
  KDIST_EXPECT_ERROR(summary, StatusCode::kFailedPrecondition, "on host host-1, pid 50001");
  KDIST_EXPECT_ERROR(summary, StatusCode::kFailedPrecondition, "on host other-host, pid 777");
  for (WorkerThread* w : {&first, &second}) {
    KDIST_EXPECT_ERROR(w->Join(), StatusCode::kFailedPrecondition, "process id 1 is claimed twice");
    KDIST_EXPECT_ERROR(w->Join(), StatusCode::kFailedPrecondition, "on host host-1, pid 50001");
    KDIST_EXPECT_ERROR(w->Join(), StatusCode::kFailedPrecondition, "on host other-host, pid 777");
  }
  EXPECT_TRUE(PlainBindWorks(coordinator.port()));
}

TEST(Coordinator, DifferentNumProcessesFailsBothSides) {
  CoordinatorThread coordinator(2, FastOptions(milliseconds(5000)));
  Hello other = TestHello(1, 3, coordinator.port());
  other.fingerprint = coordinator.own().fingerprint;
  WorkerThread worker(other, coordinator.port(), FastOptions(milliseconds(5000)));
  const std::string want = "has num_processes=3 (from argument) but process 0 (host host-0, "
                           "pid 50000) has num_processes=2 (from argument)";
  KDIST_EXPECT_ERROR(coordinator.Join(), StatusCode::kFailedPrecondition, want);
  KDIST_EXPECT_ERROR(worker.Join(), StatusCode::kFailedPrecondition, want);
}

TEST(Coordinator, WrongTokenIsRefusedAndNamed) {
  CoordinatorThread coordinator(2, FastOptions(milliseconds(700)), "right");
  Hello wrong = TestHello(1, 2, coordinator.port());
  wrong.token = "wrong";
  WorkerThread worker(wrong, coordinator.port(), FastOptions(milliseconds(5000)));
  KDIST_EXPECT_ERROR(worker.Join(), StatusCode::kFailedPrecondition,
                     "its KDIST_ROLL_CALL_TOKEN does not match");
  KDIST_EXPECT_ERROR(coordinator.Join(), StatusCode::kDeadlineExceeded,
                     "refused process 1 (host host-1, pid 50001): wrong KDIST_ROLL_CALL_TOKEN");
}

TEST(Coordinator, RightTokenJoins) {
  CoordinatorThread coordinator(2, FastOptions(milliseconds(5000)), "right");
  Hello right = TestHello(1, 2, coordinator.port());
  right.token = "right";
  WorkerThread worker(right, coordinator.port(), FastOptions(milliseconds(5000)));
  KDIST_EXPECT_OK(coordinator.Join());
  KDIST_EXPECT_OK(worker.Join());
}

Hello WithToken(Hello hello, std::string token) {
  hello.token = std::move(token);
  return hello;
}

TEST(Coordinator, MatchingTokensJoinWithoutTheTokenOnTheWire) {
  CoordinatorThread coordinator(3, FastOptions(milliseconds(5000)), "same-secret");
  const uint16_t port = coordinator.port();
  WorkerThread one(WithToken(TestHello(1, 3, port), "same-secret"), port,
                   FastOptions(milliseconds(5000)));
  WorkerThread two(WithToken(TestHello(2, 3, port), "same-secret"), port,
                   FastOptions(milliseconds(5000)));
  Result<RollCallSummary>& summary = coordinator.Join();
  KDIST_ASSERT_OK(summary);
  ASSERT_EQ(summary->members.size(), size_t{2});
  for (const Hello& member : summary->members) {
    EXPECT_EQ(member.token, std::string());  // what came off the wire
    EXPECT_EQ(member.mac.size(), kMacBytes);
  }
  KDIST_EXPECT_OK(one.Join());
  KDIST_EXPECT_OK(two.Join());
}

TEST(Coordinator, AWrongTokenIsRefusedAloneAndTheOthersStillJoin) {
  CoordinatorThread coordinator(3, FastOptions(milliseconds(5000)), "right");
  const uint16_t port = coordinator.port();
  // An intruder claims id 2 first: refused, and it cannot stop the job.
  WorkerThread intruder(WithToken(TestHello(2, 3, port), "intruder-secret"), port,
                        FastOptions(milliseconds(5000)));
  Result<WorkerResult>& refused = intruder.Join();
  KDIST_EXPECT_ERROR(refused, StatusCode::kFailedPrecondition,
                     "the roll call refused process 2 (host host-2, pid 50002): its "
                     "KDIST_ROLL_CALL_TOKEN does not match the one of process 0");
  KDIST_EXPECT_ERROR(refused, StatusCode::kFailedPrecondition,
                     "set the same KDIST_ROLL_CALL_TOKEN in every process of the job");
  EXPECT_EQ(refused.status().message().find("right"), std::string::npos);
  EXPECT_EQ(refused.status().message().find("intruder-secret"), std::string::npos);
  WorkerThread one(WithToken(TestHello(1, 3, port), "right"), port,
                   FastOptions(milliseconds(5000)));
  WorkerThread two(WithToken(TestHello(2, 3, port), "right"), port,
                   FastOptions(milliseconds(5000)));
  KDIST_EXPECT_OK(coordinator.Join());
  KDIST_EXPECT_OK(one.Join());
  KDIST_EXPECT_OK(two.Join());
}

TEST(Coordinator, ATokenOnlyOnTheWorkerIsRefusedAndNamed) {
  CoordinatorThread coordinator(2, FastOptions(milliseconds(700)));
  WorkerThread worker(WithToken(TestHello(1, 2, coordinator.port()), "only-here"),
                      coordinator.port(), FastOptions(milliseconds(5000)));
  KDIST_EXPECT_ERROR(worker.Join(), StatusCode::kFailedPrecondition,
                     "it has a KDIST_ROLL_CALL_TOKEN (its hello carries a MAC) but process 0 "
                     "(host host-0, pid 50000) has none set");
  EXPECT_EQ(worker.Join().status().message().find("only-here"), std::string::npos);
  KDIST_EXPECT_ERROR(coordinator.Join(), StatusCode::kDeadlineExceeded,
                     "refused process 1 (host host-1, pid 50001): wrong KDIST_ROLL_CALL_TOKEN");
}

TEST(Coordinator, ATokenOnlyOnProcessZeroRefusesAHelloWithoutAndNamesIt) {
  CoordinatorThread coordinator(2, FastOptions(milliseconds(700)), "only-there");
  WorkerThread worker(TestHello(1, 2, coordinator.port()), coordinator.port(),
                      FastOptions(milliseconds(5000)));
  KDIST_EXPECT_ERROR(worker.Join(), StatusCode::kFailedPrecondition,
                     "it sent no KDIST_ROLL_CALL_TOKEN proof (its hello carries no MAC) but "
                     "process 0 (host host-0, pid 50000) requires one");
  EXPECT_EQ(worker.Join().status().message().find("only-there"), std::string::npos);
  KDIST_EXPECT_ERROR(coordinator.Join(), StatusCode::kDeadlineExceeded,
                     "refused process 1 (host host-1, pid 50001): wrong KDIST_ROLL_CALL_TOKEN");
}

TEST(Coordinator, AHelloReplayedOnAnotherConnectionIsRefused) {
  CoordinatorThread coordinator(2, FastOptions(milliseconds(5000)), "job-secret");
  const uint16_t port = coordinator.port();
  const Hello honest = WithToken(TestHello(1, 2, port), "job-secret");
  // A sniffer sees connection A's challenge and the hello answering it...
  RawClient a(port);
  Result<Challenge> first = a.ReadChallenge(milliseconds(3000));
  KDIST_ASSERT_OK(first);
  const std::string sniffed = EncodeSignedHello(honest, first->nonce);
  EXPECT_EQ(sniffed.find("job-secret"), std::string::npos);
  // ...and sends that hello on its own connection, after its own challenge.
  RawClient b(port);
  Result<Challenge> second = b.ReadChallenge(milliseconds(3000));
  KDIST_ASSERT_OK(second);
  EXPECT_FALSE(first->nonce == second->nonce);  // a fresh nonce per connection
  ASSERT_TRUE(b.Send(sniffed));
  Result<Reply> verdict = b.ReadVerdict(milliseconds(3000));
  KDIST_ASSERT_OK(verdict);
  EXPECT_TRUE(verdict->type == FrameType::kReject);
  EXPECT_TRUE(verdict->message.find("its KDIST_ROLL_CALL_TOKEN does not match the one of "
                                    "process 0") != std::string::npos)
      << verdict->message;
  EXPECT_EQ(verdict->message.find("job-secret"), std::string::npos);
  // The honest process, on its own connection, joins.
  ASSERT_TRUE(a.Send(sniffed));
  KDIST_ASSERT_OK(coordinator.Join());
  Result<Reply> go = a.ReadVerdict(milliseconds(3000));
  KDIST_ASSERT_OK(go);
  EXPECT_TRUE(go->type == FrameType::kGo);
}

// Progress lines collected from a coordinator, with a bounded wait for one.
class Lines {
 public:
  std::function<void(const std::string&)> Sink() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex_);
      lines_.push_back(line);
    };
  }
  // Whether a line starting with `prefix` arrives within 10 s.
  bool WaitFor(const std::string& prefix) {
    for (int i = 0; i < 1000; ++i) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const std::string& line : lines_) {
          if (line.rfind(prefix, 0) == 0) return true;
        }
      }
      usleep(10 * 1000);
    }
    return false;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

TEST(Coordinator, ALeaverIsMissingUntilItsIdComesBack) {
  RollCallOptions options = FastOptions(milliseconds(30000));
  Lines lines;
  options.progress_interval = milliseconds(20);
  options.progress = lines.Sink();
  CoordinatorThread coordinator(3, options);
  const uint16_t port = coordinator.port();
  {
    RawClient leaver(port);
    ASSERT_TRUE(leaver.Send(EncodeHello(TestHello(1, 3, port))));
    EXPECT_TRUE(lines.WaitFor("2 of 3 processes joined; missing process ids [2]"));
  }  // closed: process 1 is missing again
  EXPECT_TRUE(lines.WaitFor("1 of 3 processes joined; missing process ids [1-2]"));
  Hello restarted = TestHello(1, 3, port);
  restarted.pid = 999;
  WorkerThread one(restarted, port, FastOptions(milliseconds(30000)));
  WorkerThread two(TestHello(2, 3, port), port, FastOptions(milliseconds(30000)));
  Result<RollCallSummary>& summary = coordinator.Join();
  KDIST_ASSERT_OK(summary);
  EXPECT_EQ(summary->members[0].pid, int64_t{999});
  KDIST_EXPECT_OK(one.Join());
  KDIST_EXPECT_OK(two.Join());
}

TEST(Coordinator, AStaleHolderIsReplacedByItsRestartedProcess) {
  // The old connection's FIN and the new hello can arrive in one poll round:
  // the new claimant must win, not fail the roll call as a duplicate.
  CoordinatorThread coordinator(3, FastOptions(milliseconds(5000)));
  const uint16_t port = coordinator.port();
  RawClient old(port);
  ASSERT_TRUE(old.Send(EncodeHello(TestHello(1, 3, port))));
  usleep(100 * 1000);
  RawClient fresh(port);
  old.Close();
  ASSERT_TRUE(fresh.Send(EncodeHello(TestHello(1, 3, port))));
  WorkerThread two(TestHello(2, 3, port), port, FastOptions(milliseconds(5000)));
  KDIST_EXPECT_OK(coordinator.Join());
  Result<Reply> verdict = fresh.ReadVerdict(milliseconds(3000));
  KDIST_ASSERT_OK(verdict);
  EXPECT_TRUE(verdict->type == FrameType::kGo);
  EXPECT_EQ(verdict->shared.seed, coordinator.shared().seed);
  KDIST_EXPECT_OK(two.Join());
}

TEST(Coordinator, OtherProtocolVersionIsAnsweredAndRefused) {
  CoordinatorThread coordinator(2, FastOptions(milliseconds(500)));
  RawClient future(coordinator.port());
  std::string frame = EncodeHello(TestHello(1, 2, coordinator.port()));
  frame[4] = 0;
  frame[5] = 9;  // version 9
  ASSERT_TRUE(future.Send(frame));
  Result<Reply> verdict = future.ReadVerdict(milliseconds(3000));
  KDIST_ASSERT_OK(verdict);
  EXPECT_TRUE(verdict->type == FrameType::kReject);
  EXPECT_TRUE(verdict->code == StatusCode::kFailedPrecondition);
  EXPECT_TRUE(verdict->message.find("protocol version 9") != std::string::npos);
  KDIST_EXPECT_ERROR(coordinator.Join(), StatusCode::kDeadlineExceeded, "protocol version 9");
}

TEST(Coordinator, WaitingWorkersHearProcessZerosProgress) {
  RollCallOptions coordinator_options = FastOptions(milliseconds(800));
  coordinator_options.progress_interval = milliseconds(50);
  coordinator_options.progress = [](const std::string&) {};
  CoordinatorThread coordinator(3, coordinator_options);
  RollCallOptions worker_options = FastOptions(milliseconds(3000));
  std::mutex mutex;
  std::vector<std::string> lines;
  worker_options.progress_interval = milliseconds(100);
  worker_options.progress = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.push_back(line);
  };
  WorkerThread worker(TestHello(1, 3, coordinator.port()), coordinator.port(), worker_options);
  KDIST_EXPECT_ERROR(coordinator.Join(), StatusCode::kDeadlineExceeded, "2 of 3 joined");
  KDIST_EXPECT_ERROR(worker.Join(), StatusCode::kDeadlineExceeded, "missing process ids [2]");
  std::lock_guard<std::mutex> lock(mutex);
  bool relayed = false;
  for (const std::string& line : lines) {
    if (line.find("connected to coordinator 127.0.0.1:") == 0 &&
        line.find("as process 1 of 3, waiting for the roll call: process 0 reports 2 of 3 "
                  "processes joined; missing process ids [2]") != std::string::npos) {
      relayed = true;
    }
  }
  EXPECT_TRUE(relayed);
}

TEST(Coordinator, TakenPortNamesThePortAndItsHolder) {
  RealClock clock;
  RollCallOptions options = FastOptions(milliseconds(1000));
  Result<Listener> holder = ListenOnAllInterfaces(0, 4);
  KDIST_ASSERT_OK(holder);
  const Nanos start = clock.Now();
  Result<RollCallSummary> result =
      RunCoordinator(TestHello(0, 2, holder->port), JobShared{}, holder->port, options, clock);
  // A taken port is reported at once, before the roll call's deadline (1 s here).
  EXPECT_LT((clock.Now() - start).count(), Nanos(milliseconds(1000)).count());
  KDIST_EXPECT_ERROR(result, StatusCode::kAlreadyExists,
                     "process 0 cannot use coordinator port " + std::to_string(holder->port));
  KDIST_EXPECT_ERROR(result, StatusCode::kAlreadyExists,
                     "held by pid " + std::to_string(getpid()));
}

TEST(Coordinator, InterruptStopsAtOnceAndFreesThePort) {
  RollCallOptions options = FastOptions(milliseconds(30000));
  options.check_interval = milliseconds(10);
  std::atomic<bool> stop{false};
  options.interrupted = [&]() -> Status {
    return stop ? Internal("interrupted by test") : Status::Ok();
  };
  CoordinatorThread coordinator(3, options);
  RawClient member(coordinator.port());
  ASSERT_TRUE(member.Send(EncodeHello(TestHello(1, 3, coordinator.port()))));
  usleep(50 * 1000);
  RealClock clock;
  const Nanos start = clock.Now();
  stop = true;
  KDIST_EXPECT_ERROR(coordinator.Join(), StatusCode::kInternal, "interrupted by test");
  EXPECT_LT((clock.Now() - start).count(), Nanos(milliseconds(15000)).count());  // not 30 s
  EXPECT_TRUE(PlainBindWorks(coordinator.port()));
}

TEST(Coordinator, AThousandWorkersOnOneCoordinator) {
  // Raw clients stand in for worker processes; the coordinator is the real
  // one. Both ends live in this process: two descriptors per worker.
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  const int kWorkers = static_cast<int>(
      std::min<rlim_t>(1000, limit.rlim_cur > 200 ? (limit.rlim_cur - 100) / 2 : 50));
  CoordinatorThread coordinator(kWorkers + 1, FastOptions(milliseconds(20000)));
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 1; i <= kWorkers; ++i) {
    clients.push_back(std::make_unique<RawClient>(coordinator.port()));
    ASSERT_TRUE(clients.back()->connected());
    ASSERT_TRUE(clients.back()->Send(EncodeHello(TestHello(i, kWorkers + 1, coordinator.port()))));
  }
  int go = 0;
  for (auto& client : clients) {
    Result<Reply> verdict = client->ReadVerdict(milliseconds(10000));
    if (verdict.ok() && verdict->type == FrameType::kGo) ++go;
    client->Close();
  }
  EXPECT_EQ(go, kWorkers);
  KDIST_ASSERT_OK(coordinator.Join());
  EXPECT_EQ(coordinator.Join()->members.size(), static_cast<size_t>(kWorkers));
}

}  // namespace
}  // namespace kdist
