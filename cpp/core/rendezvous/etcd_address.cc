#include "rendezvous/etcd_address.h"

#include <algorithm>
#include <utility>

#include "base/text.h"
#include "net/local_address.h"

namespace kdist {
namespace {

constexpr std::string_view kForm =
    "expected etcd://HOST:PORT[,HOST:PORT...][/PREFIX], each HOST:PORT optionally "
    "https:// (TLS) or http://";

bool IsPrefixPart(char c) { return IsAlnum(c) || c == '.' || c == '_' || c == '-' || c == '/'; }

}  // namespace

std::string EtcdEndpoint::Url() const {
  return std::string(tls ? "https://" : "http://") + address.ToString();
}

std::string EtcdPlace::ToString() const {
  std::vector<std::string> urls;
  for (const EtcdEndpoint& endpoint : endpoints) urls.push_back(endpoint.Url());
  return std::string(kEtcdScheme) + Join(urls, ",") + "/" + prefix;
}

bool IsEtcdRendezvous(std::string_view text) {
  return text.substr(0, kEtcdScheme.size()) == kEtcdScheme;
}

Result<EtcdPlace> ParseEtcdRendezvous(std::string_view text) {
  const std::string quoted = Quote(text);
  if (!IsEtcdRendezvous(text)) return InvalidArgument(quoted + ": " + std::string(kForm));
  std::string_view rest = text.substr(kEtcdScheme.size());
  EtcdPlace place;
  place.loopback = true;
  while (true) {
    EtcdEndpoint endpoint;
    for (const auto& [scheme, tls] : {std::pair<std::string_view, bool>{"https://", true},
                                      std::pair<std::string_view, bool>{"http://", false}}) {
      if (rest.substr(0, scheme.size()) == scheme) {
        endpoint.tls = tls;
        rest.remove_prefix(scheme.size());
        break;
      }
    }
    // The endpoint ends at the next ',' or at the '/' that begins the prefix.
    const size_t end = std::min(rest.find(','), rest.find('/'));
    const std::string_view part = rest.substr(0, end);
    if (part.empty()) {
      return InvalidArgument(quoted + ": endpoint " + std::to_string(place.endpoints.size() + 1) +
                             " is empty; " + std::string(kForm));
    }
    Result<Address> address = ParseAddress(part);
    if (!address.ok()) {
      return InvalidArgument(quoted + ": endpoint " + Quote(part) + ": " + address.status().message());
    }
    endpoint.address = *address;
    place.loopback = place.loopback && (endpoint.address.host == "localhost" ||
                                        (endpoint.address.kind != HostKind::kName &&
                                         IsLoopbackAddress(endpoint.address.host)));
    place.endpoints.push_back(std::move(endpoint));
    if (end == std::string_view::npos) {
      rest = {};
      break;
    }
    const char separator = rest[end];
    rest.remove_prefix(end + 1);
    if (separator == '/') break;
  }
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty()) {
    place.prefix = std::string(kDefaultEtcdPrefix);
  } else if (!std::all_of(rest.begin(), rest.end(), IsPrefixPart) || rest.front() == '/' ||
             rest.find("//") != std::string_view::npos) {
    return InvalidArgument(quoted + ": the prefix " + Quote(rest) +
                           " is not made of letters, digits, '.', '_', '-' and single '/'; " +
                           std::string(kForm));
  } else {
    place.prefix = std::string(rest);
  }
  return place;
}

}  // namespace kdist
