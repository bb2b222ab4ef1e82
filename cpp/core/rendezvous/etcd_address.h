// `kdist launch --nodes ... --rendezvous etcd://HOST:PORT[,HOST:PORT...][/PREFIX]`: the
// etcd cluster that keeps the job's book (rendezvous/rendezvous_state.h), parsed. Each
// endpoint may carry its scheme (`https://HOST:PORT` for TLS, `http://` by default);
// PREFIX (default "kdist") is where the jobs' keys live: PREFIX/JOB_ID/.
//
//   etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379
//   etcd://https://etcd-a:2379,https://etcd-b:2379/team-a
#ifndef KDIST_RENDEZVOUS_ETCD_ADDRESS_H_
#define KDIST_RENDEZVOUS_ETCD_ADDRESS_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "net/address.h"

namespace kdist {

inline constexpr std::string_view kEtcdScheme = "etcd://";
inline constexpr std::string_view kDefaultEtcdPrefix = "kdist";

struct EtcdEndpoint {
  bool tls = false;  // https://
  Address address;
  // "http://10.0.0.1:2379": what the gateway's requests go to.
  std::string Url() const;
};

struct EtcdPlace {
  std::vector<EtcdEndpoint> endpoints;
  std::string prefix;  // without a leading or trailing '/': "kdist", "team-a/jobs"
  // Every endpoint's host is a loopback address (or "localhost"): only this machine's
  // agents can meet there.
  bool loopback = false;
  // "etcd://http://10.0.0.1:2379,https://b:2379/kdist": as the agents print it.
  std::string ToString() const;
};

// Whether `text` names an etcd rendezvous (begins with etcd://).
bool IsEtcdRendezvous(std::string_view text);
// kInvalidArgument naming the bad part and the expected form.
Result<EtcdPlace> ParseEtcdRendezvous(std::string_view text);

}  // namespace kdist

#endif  // KDIST_RENDEZVOUS_ETCD_ADDRESS_H_
