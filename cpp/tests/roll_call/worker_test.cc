#include "roll_call/worker.h"

#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "base/hmac_sha256.h"
#include "roll_call/coordinator.h"
#include "testing/roll_call_helpers.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FastOptions;
using testing::Loopback;
using testing::TestHello;

// A port nobody listens on (bound once, then released).
uint16_t ClosedPort() {
  Result<Listener> listener = ListenOnAllInterfaces(0, 1);
  return listener.ok() ? listener->port : 1;
}

TEST(Worker, UnreachableCoordinatorWithAFakeClock) {
  // Every wait goes through the fake clock; connecting to a closed loopback
  // port is refused at once, so 300 s of retries run in milliseconds.
  FakeClock clock;
  const uint16_t port = ClosedPort();
  RollCallOptions options;
  options.deadline = Deadline::StartingNow(clock, seconds(300));
  options.seed = 7;
  std::vector<std::string> lines;
  options.progress = [&](const std::string& line) { lines.push_back(line); };
  Result<WorkerResult> result = RunWorker(TestHello(1, 2, port), Loopback(port), options, clock);
  const std::string where = "127.0.0.1:" + std::to_string(port);
  KDIST_EXPECT_ERROR(result, StatusCode::kUnavailable,
                     "process 1 (host host-1, pid 50001) could not reach the coordinator " +
                         where + " within 300 s: ");
  KDIST_EXPECT_ERROR(result, StatusCode::kUnavailable,
                     "last error: connection refused, elapsed 300 s");
  EXPECT_EQ(clock.Now().count(), Nanos(seconds(300)).count());
  // Delays are capped (jittered down by at most half): the attempts fit
  // between timeout / cap and timeout / (cap / 2), plus the first steps.
  const std::string& message = result.status().message();
  const size_t at = message.find(" attempts,");
  ASSERT_TRUE(at != std::string::npos);
  const size_t begin = message.rfind(' ', at - 1) + 1;
  const int attempts = std::stoi(message.substr(begin, at - begin));
  const int64_t cap_ms = std::chrono::duration_cast<milliseconds>(options.backoff.cap).count();
  EXPECT_GE(attempts, 300000 / cap_ms);
  EXPECT_LE(attempts, 2 * 300000 / cap_ms + 20);
  for (Nanos slept : clock.sleeps()) EXPECT_LE(slept.count(), options.backoff.cap.count());
  // A progress line every 5 s, in the documented form.
  EXPECT_EQ(lines.size(), size_t{60});  // 5 s, 10 s, ..., 300 s
  ASSERT_TRUE(lines.size() > 2);
  EXPECT_EQ(lines[1],
            "waiting for the coordinator " + where + ": connection refused; 10 s of 300 s");
}

TEST(Worker, GivesUpAtTheDeadlineOnARealClock) {
  RealClock clock;
  const uint16_t port = ClosedPort();
  RollCallOptions options = FastOptions(milliseconds(300));
  const Nanos start = clock.Now();
  Result<WorkerResult> result = RunWorker(TestHello(1, 2, port), Loopback(port), options, clock);
  const Nanos took = clock.Now() - start;
  KDIST_EXPECT_ERROR(result, StatusCode::kUnavailable, "connection refused");
  // Not before the deadline (its exactness is shown with the fake clock above).
  EXPECT_GE(took.count(), Nanos(milliseconds(295)).count());
}

TEST(Worker, WaitsForACoordinatorThatStartsLate) {
  RealClock clock;
  Result<Listener> reserve = ListenOnAllInterfaces(0, 1);
  KDIST_ASSERT_OK(reserve);
  const uint16_t port = reserve->port;
  reserve->fd.Close();
  std::mutex mutex;
  std::vector<std::string> lines;
  RollCallOptions options = FastOptions(milliseconds(5000));
  options.progress_interval = milliseconds(50);
  options.progress = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.push_back(line);
  };
  Result<WorkerResult> worker = Internal("not run");
  std::thread thread([&] { worker = RunWorker(TestHello(1, 2, port), Loopback(port), options, clock); });
  usleep(300 * 1000);
  RollCallOptions coordinator_options = FastOptions(milliseconds(5000));
  Result<RollCallSummary> summary =
      RunCoordinator(TestHello(0, 2, port), JobShared{77}, port, coordinator_options, clock);
  thread.join();
  KDIST_EXPECT_OK(summary);
  KDIST_ASSERT_OK(worker);
  EXPECT_GE(worker->attempts, int64_t{2});
  EXPECT_EQ(worker->go.shared.seed, int64_t{77});  // what process 0's "go" carried
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_TRUE(!lines.empty());
  EXPECT_EQ(lines.front().rfind("waiting for the coordinator 127.0.0.1:" + std::to_string(port) +
                                     ": connection refused; ",
                                 0),
            size_t{0});
}

TEST(Worker, ResolvesLocalhost) {
  RealClock clock;
  RollCallOptions options = FastOptions(milliseconds(5000));
  Result<Listener> listener = BindCoordinatorPort(0, options, clock);
  KDIST_ASSERT_OK(listener);
  const uint16_t port = listener->port;
  Result<RollCallSummary> summary = Internal("not run");
  Hello own = TestHello(0, 2, port);
  own.coordinator = "localhost:" + std::to_string(port);
  std::thread thread([&] { summary = RunCoordinatorOn(std::move(listener).value(), own, JobShared{77}, options, clock); });
  Hello hello = TestHello(1, 2, port);
  hello.coordinator = own.coordinator;
  hello.fingerprint = own.fingerprint;
  Address address;
  address.host = "localhost";
  address.port = port;
  address.kind = HostKind::kName;
  Result<WorkerResult> worker = RunWorker(hello, address, options, clock);
  thread.join();
  KDIST_EXPECT_OK(summary);
  KDIST_EXPECT_OK(worker);
}

TEST(Worker, SomethingElseOnThePortIsNamed) {
  // A server that answers like an HTTP/2 (gRPC) endpoint: process 0 running
  // plain JAX, or kdist with the pre-flight off.
  Result<Listener> listener = ListenOnAllInterfaces(0, 4);
  KDIST_ASSERT_OK(listener);
  const uint16_t port = listener->port;
  std::thread server([&] {
    std::vector<pollfd> fds{{listener->fd.get(), POLLIN, 0}};
    if (Poll(fds, seconds(3)) <= 0) return;
    Accepted a = AcceptOne(listener->fd.get());
    (void)WriteSome(a.fd.get(), std::string("\x00\x00\x12\x04\x00\x00\x00\x00\x00", 9));
    usleep(200 * 1000);
  });
  RealClock clock;
  Result<WorkerResult> worker =
      RunWorker(TestHello(1, 2, port), Loopback(port), FastOptions(milliseconds(3000)), clock);
  server.join();
  KDIST_EXPECT_ERROR(worker, StatusCode::kFailedPrecondition,
                     "is answered by something that does not speak kdist's roll call");
  KDIST_EXPECT_ERROR(worker, StatusCode::kFailedPrecondition, "\\x00\\x00\\x12\\x04");
}

TEST(Worker, AListenerThatNeverAnswersIsNotTheCoordinator) {
  // A relay, a proxy or a stalled host accepts the connection and says
  // nothing (no challenge): at the deadline the coordinator counts as unreachable.
  Result<Listener> listener = ListenOnAllInterfaces(0, 4);
  KDIST_ASSERT_OK(listener);
  const uint16_t port = listener->port;
  std::atomic<bool> done{false};
  std::thread server([&] {
    std::vector<Fd> held;
    while (!done) {
      std::vector<pollfd> fds{{listener->fd.get(), POLLIN, 0}};
      if (Poll(fds, milliseconds(20)) > 0) held.push_back(AcceptOne(listener->fd.get()).fd);
    }
  });
  RealClock clock;
  Result<WorkerResult> worker =
      RunWorker(TestHello(1, 2, port), Loopback(port), FastOptions(milliseconds(400)), clock);
  done = true;
  server.join();
  KDIST_EXPECT_ERROR(worker, StatusCode::kUnavailable,
                     "but nothing answered before the deadline (no challenge came)");
}

// A fake process 0 on loopback: accepts one connection, sends `challenge`
// first, keeps every byte the process sends until a whole frame has come (or
// the connection ends), then answers `answer` and closes. With a challenge it
// skips the process's opening (as process 0 does); with none (an older
// process 0) the opening is the frame it answers.
class FakeProcessZero {
 public:
  FakeProcessZero(std::string challenge, std::string answer) {
    Result<Listener> listener = ListenOnAllInterfaces(0, 4);
    if (!listener.ok()) return;
    port_ = listener->port;
    thread_ = std::thread([this, l = std::move(listener).value(), challenge, answer]() mutable {
      std::vector<pollfd> fds{{l.fd.get(), POLLIN, 0}};
      if (Poll(fds, seconds(5)) <= 0) return;
      Accepted a = AcceptOne(l.fd.get());
      if (a.io.state != IoState::kDone) return;
      if (!challenge.empty()) (void)WriteSome(a.fd.get(), challenge);
      FrameAssembler in;
      RealClock clock;
      const Nanos until = clock.Now() + seconds(5);
      while (clock.Now() < until) {
        std::vector<pollfd> one{{a.fd.get(), POLLIN, 0}};
        if (Poll(one, milliseconds(50)) <= 0) continue;
        char buffer[4096];
        const Io io = ReadSome(a.fd.get(), buffer, sizeof buffer);
        if (io.state == IoState::kEof || io.state == IoState::kError) break;
        if (io.state != IoState::kDone) continue;
        received_.append(buffer, io.bytes);
        if (!in.Append(std::string_view(buffer, io.bytes)).ok()) break;
        frame_ = in.TakeFrame();
        while (!challenge.empty() && IsOpening(frame_)) frame_ = in.TakeFrame();
        if (!frame_.empty()) break;
      }
      if (!answer.empty()) (void)WriteSome(a.fd.get(), answer);
      usleep(100 * 1000);
    });
  }
  ~FakeProcessZero() { Join(); }
  uint16_t port() const { return port_; }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  const std::string& received() const { return received_; }  // after Join()
  const std::string& frame() const { return frame_; }

 private:
  uint16_t port_ = 0;
  std::string received_;
  std::string frame_;
  std::thread thread_;
};

std::string Refusal() {
  Reply reject;
  reject.type = FrameType::kReject;
  reject.code = StatusCode::kFailedPrecondition;
  reject.message = "seen enough";
  return EncodeReply(reject);
}

TEST(Worker, TheTokenNeverLeavesTheProcessOnlyAMacOverTheChallenge) {
  Nonce nonce{};
  for (size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(0xa0 + i);
  FakeProcessZero fake(EncodeChallenge(Challenge{nonce}), Refusal());
  Hello hello = TestHello(1, 2, fake.port());
  hello.token = "the-job-secret-42";
  RealClock clock;
  Result<WorkerResult> worker =
      RunWorker(hello, Loopback(fake.port()), FastOptions(milliseconds(3000)), clock);
  fake.Join();
  KDIST_EXPECT_ERROR(worker, StatusCode::kFailedPrecondition, "seen enough");
  ASSERT_FALSE(fake.frame().empty());
  EXPECT_EQ(fake.received(), EncodeOpening() + fake.frame());  // and nothing else
  // No byte run of the token is in what it sent, nor its halves.
  for (std::string_view part : {std::string_view(hello.token), std::string_view("the-job-sec"),
                                std::string_view("secret-42")}) {
    EXPECT_EQ(fake.received().find(part), std::string::npos) << part;
  }
  Result<Hello> received = DecodeHello(fake.frame());
  KDIST_ASSERT_OK(received);
  EXPECT_EQ(received->token, std::string());
  Result<std::string> covered = FrameMacInput(fake.frame());
  KDIST_ASSERT_OK(covered);
  const std::string nonce_bytes(reinterpret_cast<const char*>(nonce.data()), nonce.size());
  EXPECT_EQ(received->mac,
            std::string(DigestBytes(ComputeHmacSha256(hello.token, nonce_bytes + *covered))));
}

TEST(Worker, WithoutATokenTheHelloCarriesNoMac) {
  FakeProcessZero fake(EncodeChallenge(Challenge{}), Refusal());
  RealClock clock;
  Result<WorkerResult> worker = RunWorker(TestHello(1, 2, fake.port()), Loopback(fake.port()),
                                          FastOptions(milliseconds(3000)), clock);
  fake.Join();
  KDIST_EXPECT_ERROR(worker, StatusCode::kFailedPrecondition, "seen enough");
  Result<Hello> received = DecodeHello(fake.frame());
  KDIST_ASSERT_OK(received);
  EXPECT_EQ(received->mac, std::string());
  EXPECT_EQ(fake.frame(), EncodeHello(TestHello(1, 2, fake.port())));
}

TEST(Worker, AChallengeOfAnotherVersionAsksForTheSameKdist) {
  std::string challenge = EncodeChallenge(Challenge{});
  challenge[5] = 9;  // version 9
  FakeProcessZero fake(challenge, "");
  RealClock clock;
  Result<WorkerResult> worker = RunWorker(TestHello(1, 2, fake.port()), Loopback(fake.port()),
                                          FastOptions(milliseconds(3000)), clock);
  fake.Join();
  KDIST_EXPECT_ERROR(worker, StatusCode::kFailedPrecondition,
                     "cannot read as its challenge: it speaks kdist roll call protocol version 9");
  KDIST_EXPECT_ERROR(worker, StatusCode::kFailedPrecondition, "install the same kdist version");
}

TEST(Worker, AnOlderProcessZeroRefusesTheOpeningAtOnce) {
  // A version-2 process 0 sends no challenge; it waits for a hello, and
  // answers a frame of another version with its refusal, in its own version.
  Reply refusal;
  refusal.type = FrameType::kReject;
  refusal.code = StatusCode::kFailedPrecondition;
  refusal.message = "refused this hello: it speaks kdist roll call protocol version 3";
  std::string old_refusal = EncodeReply(refusal);
  old_refusal[5] = 2;
  FakeProcessZero fake("", old_refusal);
  RealClock clock;
  const Nanos start = clock.Now();
  Result<WorkerResult> worker = RunWorker(TestHello(1, 2, fake.port()), Loopback(fake.port()),
                                          FastOptions(milliseconds(30000)), clock);
  fake.Join();
  EXPECT_EQ(fake.frame(), EncodeOpening());  // the first thing a process sends
  EXPECT_TRUE(IsOpening(fake.frame()));
  KDIST_EXPECT_ERROR(worker, StatusCode::kFailedPrecondition,
                     "it speaks kdist roll call protocol version 2, this process speaks version "
                     "4; install the same kdist version in every process of the job");
  EXPECT_LT((clock.Now() - start).count(), Nanos(seconds(10)).count());  // not the deadline
}

TEST(Worker, ACoordinatorWaitingForOthersIsATimeoutNotUnreachable) {
  // Process 0 acknowledges the hello at once, so the worker knows it was heard
  // even when the deadline comes before any progress line.
  RealClock clock;
  RollCallOptions options = FastOptions(milliseconds(600));
  options.progress_interval = seconds(60);
  Result<Listener> listener = BindCoordinatorPort(0, options, clock);
  KDIST_ASSERT_OK(listener);
  const uint16_t port = listener->port;
  Result<RollCallSummary> summary = Internal("not run");
  std::thread thread([&] {
    summary = RunCoordinatorOn(std::move(listener).value(), TestHello(0, 3, port), JobShared{77}, options, clock);
  });
  RollCallOptions worker_options = FastOptions(milliseconds(400));
  worker_options.progress_interval = seconds(60);
  Result<WorkerResult> worker = RunWorker(TestHello(1, 3, port), Loopback(port), worker_options,
                                          clock);
  thread.join();
  KDIST_EXPECT_ERROR(worker, StatusCode::kDeadlineExceeded, "and sent its hello");
  KDIST_EXPECT_ERROR(worker, StatusCode::kDeadlineExceeded, "process 0 last reported 2 of 3");
  // The worker left at its own (earlier) deadline, so process 0 counts it missing again.
  KDIST_EXPECT_ERROR(summary, StatusCode::kDeadlineExceeded, "missing process ids [1-2]");
}

TEST(Worker, InterruptStopsTheRetries) {
  RealClock clock;
  const uint16_t port = ClosedPort();
  RollCallOptions options = FastOptions(milliseconds(30000));
  options.check_interval = milliseconds(10);
  const Nanos start = clock.Now();
  options.interrupted = [&]() -> Status {
    return clock.Now() - start > milliseconds(100) ? Internal("interrupted by test") : Status::Ok();
  };
  Result<WorkerResult> result = RunWorker(TestHello(1, 2, port), Loopback(port), options, clock);
  KDIST_EXPECT_ERROR(result, StatusCode::kInternal, "interrupted by test");
  EXPECT_LT((clock.Now() - start).count(), Nanos(seconds(15)).count());  // not the 30 s
}

TEST(Worker, ServiceWaitSucceedsWhenTheListenerAppears) {
  RealClock clock;
  Result<Listener> reserve = ListenOnAllInterfaces(0, 1);
  KDIST_ASSERT_OK(reserve);
  const uint16_t port = reserve->port;
  reserve->fd.Close();
  Result<Endpoint> endpoint = EndpointFromLiteral("127.0.0.1", port);
  KDIST_ASSERT_OK(endpoint);
  std::atomic<bool> done{false};
  std::thread late([&] {
    usleep(150 * 1000);
    Result<Listener> service = ListenOnAllInterfaces(port, 4);
    for (int i = 0; i < 1000 && !done; ++i) usleep(10 * 1000);  // up until the probe ends
  });
  const Nanos start = clock.Now();
  KDIST_EXPECT_OK(WaitForCoordinatorService(*endpoint, FastOptions(milliseconds(30000)), clock));
  const Nanos took = clock.Now() - start;
  done = true;
  late.join();
  EXPECT_GE(took.count(), Nanos(milliseconds(140)).count());  // not before it listened
}

TEST(Worker, ServiceWaitHasADeadline) {
  RealClock clock;
  Result<Endpoint> endpoint = EndpointFromLiteral("127.0.0.1", ClosedPort());
  KDIST_ASSERT_OK(endpoint);
  KDIST_EXPECT_ERROR(WaitForCoordinatorService(*endpoint, FastOptions(milliseconds(100)), clock),
                     StatusCode::kDeadlineExceeded,
                     "process 0's JAX coordination service did not accept connections");
}

TEST(Worker, TheLivenessHubIsAtTheAddressThatAnsweredOnThePortGoAnnounced) {
  WorkerResult result;
  Result<Endpoint> answered = EndpointFromLiteral("::1", 5000);
  KDIST_ASSERT_OK(answered);
  result.connected_to = *answered;
  result.go.shared.liveness_port = 40001;
  Result<Endpoint> hub = LivenessHubEndpoint(result);
  KDIST_ASSERT_OK(hub);
  EXPECT_EQ(hub->ToString(), "[::1]:40001");
}

TEST(Worker, AGoWithoutALivenessPortSaysProcessZeroCouldNotListen) {
  WorkerResult result;
  Result<Endpoint> answered = EndpointFromLiteral("127.0.0.1", 5000);
  KDIST_ASSERT_OK(answered);
  result.connected_to = *answered;
  KDIST_EXPECT_ERROR(LivenessHubEndpoint(result), StatusCode::kFailedPrecondition,
                     "process 0 announced no liveness channel");
}

}  // namespace
}  // namespace kdist
