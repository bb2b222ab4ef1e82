#include "config/clusters/gce_metadata.h"

#include <cstdio>
#include <utility>

#include "base/text.h"
#include "base/waiter.h"
#include "net/address.h"
#include "net/http_get.h"

namespace kdist {
namespace {

// GCE_METADATA_IP as JAX writes it into a URL: "host", "host:port", "[v6]:port".
Result<Address> ServerAddress(std::string_view text) {
  if (Result<Address> address = ParseAddress(text); address.ok()) return address;
  std::string_view host = text;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  KDIST_ASSIGN_OR_RETURN(const HostKind kind, ParseHost(host));
  return Address{std::string(host), 80, kind};
}

std::string Seconds(Nanos n) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", NanosToSeconds(n));
  return text;
}

}  // namespace

GceMetadataServer::GceMetadataServer(const Environment& env, Clock& clock, MetadataBounds bounds)
    : clock_(clock), bounds_(bounds) {
  if (const std::string* ip = Lookup(env, kEnvGceMetadataIp)) {
    text_ = *ip;
    source_ = std::string(kEnvGceMetadataIp);
  } else {
    text_ = std::string(kDefaultGceMetadataHost);
    source_ = "default";
  }
}

std::string GceMetadataServer::Describe() const {
  return "the GCE metadata server at " + Quote(text_) +
         (source_ == "default" ? std::string(" (GCE_METADATA_IP is not set)")
                               : " (" + source_ + ")");
}

Result<std::string> GceMetadataServer::Attribute(std::string_view key) {
  const auto known = answers_.find(key);
  if (known != answers_.end()) return known->second;
  Result<std::string> answer = Fetch(key);
  answers_.emplace(std::string(key), answer);
  return answer;
}

Result<std::string> GceMetadataServer::Fetch(std::string_view key) {
  Result<Address> server = ServerAddress(text_);
  if (!server.ok()) {
    return InvalidArgument(std::string(kEnvGceMetadataIp) + "=" + Quote(text_) + " " +
                           server.status().message() +
                           "; expected the metadata server's host or host:port, such as "
                           "\"169.254.169.254\" or \"127.0.0.1:8080\"");
  }
  const std::string path = "/computeMetadata/v1/instance/attributes/" + std::string(key);
  Status last = Internal("no attempt");
  for (int attempt = 0; attempt < bounds_.attempts; ++attempt) {
    if (attempt > 0) clock_.Sleep(bounds_.pause);
    WaitOptions options;
    options.deadline = Deadline::StartingNow(clock_, bounds_.attempt);
    Waiter waiter(clock_, options);
    ++requests_;
    Result<HttpReply> reply = HttpGet(*server, path, {{"Metadata-Flavor", "Google"}}, waiter);
    if (reply.ok() && reply->status == 200) return std::move(reply->body);
    if (reply.ok() && reply->status == 404) {
      return NotFound(Describe() + " has no instance attribute " + Quote(key) + " (HTTP 404)");
    }
    last = reply.ok() ? Unavailable("it answered HTTP " + std::to_string(reply->status) + ": " +
                                    Quote(reply->body, 120))
                      : reply.status();
  }
  const std::string message =
      Describe() + " did not give the instance attribute " + Quote(key) + " in " +
      std::to_string(bounds_.attempts) + " attempts of at most " + Seconds(bounds_.attempt) +
      " each (" + Seconds(bounds_.Total()) + " in all); the last: " + last.message();
  if (last.code() == StatusCode::kDeadlineExceeded) return DeadlineExceeded(message);
  return Unavailable(message);
}

}  // namespace kdist
