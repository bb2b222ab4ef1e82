// The GCE metadata server, reached as JAX reaches it: http://$GCE_METADATA_IP
// (default metadata.google.internal), path
// /computeMetadata/v1/instance/attributes/<key>, header Metadata-Flavor:
// Google. Every request is bounded (a deadline per attempt, a few attempts, a
// pause between them, a size cap); each attribute is asked once and kept.
#ifndef KDIST_CONFIG_CLUSTERS_GCE_METADATA_H_
#define KDIST_CONFIG_CLUSTERS_GCE_METADATA_H_

#include <chrono>
#include <map>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/environment.h"
#include "base/status.h"
#include "config/clusters/detection.h"

namespace kdist {

inline constexpr std::string_view kEnvGceMetadataIp = "GCE_METADATA_IP";
inline constexpr std::string_view kDefaultGceMetadataHost = "metadata.google.internal";

struct MetadataBounds {
  Nanos attempt = std::chrono::seconds(3);            // one request, connect to last byte
  int attempts = 3;                                   // a refused or failed request is retried
  Nanos pause = std::chrono::milliseconds(500);       // between attempts
  // The whole: attempts * attempt + (attempts - 1) * pause (10 s by default).
  Nanos Total() const { return attempts * attempt + (attempts > 1 ? (attempts - 1) * pause : Nanos(0)); }
};

// The real server. Not thread-safe; one per resolve.
class GceMetadataServer final : public InstanceMetadata {
 public:
  GceMetadataServer(const Environment& env, Clock& clock, MetadataBounds bounds = {});

  // 200: the body; 404: kNotFound; a server that cannot be reached, answers
  // otherwise or not in time, after every attempt: kUnavailable or
  // kDeadlineExceeded naming the server, the key, the attempts and the last
  // failure. A malformed GCE_METADATA_IP: kInvalidArgument.
  Result<std::string> Attribute(std::string_view key) override;
  std::string Describe() const override;

  // How many HTTP requests were sent (tests).
  int requests() const { return requests_; }

 private:
  Result<std::string> Fetch(std::string_view key);

  std::string text_;    // the host[:port] asked, as GCE_METADATA_IP gives it
  std::string source_;  // "GCE_METADATA_IP" or "default"
  Clock& clock_;
  MetadataBounds bounds_;
  std::map<std::string, Result<std::string>, std::less<>> answers_;
  int requests_ = 0;
};

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_GCE_METADATA_H_
