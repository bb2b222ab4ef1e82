#include "config/clusters/ompi_uri.h"

#include <string>

#include "base/scalars.h"
#include "base/text.h"

namespace kdist {
namespace {

constexpr std::string_view kExpectedForm =
    "expected <job id>.<vpid>;tcp://<IPv4>[,<IPv4>...]:<port>, e.g. "
    "1531576320.0;tcp://10.0.0.1:34911";

Status Malformed(const std::string& reason) {
  return InvalidArgument(reason + "; " + std::string(kExpectedForm));
}

Result<uint64_t> ParseId(std::string_view text, std::string_view what) {
  Result<uint64_t> value = ParseDigits(text);
  if (!value.ok()) {
    return Malformed("has " + std::string(what) + " " + Quote(text) +
                     ", which is not a non-negative integer (" + value.status().message() + ")");
  }
  return *value;
}

// The "a,b,c" hosts and the port text of one URI, appended to `out` (IPv6
// addresses when `ipv6`, else IPv4).
Status AppendHosts(std::string_view hosts, std::string_view port_text, bool ipv6,
                   std::string_view uri, std::vector<Address>& out) {
  Result<uint16_t> port = ParsePort(port_text);
  if (!port.ok()) {
    return Malformed("has the URI " + Quote(uri) + " whose port " + Quote(port_text) + " " +
                     port.status().message());
  }
  const HostKind wanted = ipv6 ? HostKind::kIPv6 : HostKind::kIPv4;
  for (std::string_view host : Split(hosts, ',')) {
    Result<HostKind> kind = ParseHost(host);
    if (!kind.ok() || *kind != wanted) {
      return Malformed("has the URI " + Quote(uri) + " whose entry " + Quote(host) + " " +
                       (ipv6 ? "is not a valid IPv6 address"
                             : "is not a valid IPv4 address (four numbers 0..255)"));
    }
    out.push_back(Address{std::string(host), *port, wanted});
  }
  return Status::Ok();
}

}  // namespace

Result<OmpiHnpUri> ParseOmpiHnpUri(std::string_view text) {
  if (text.empty()) return Malformed("is empty");
  const std::vector<std::string_view> parts = Split(text, ';');
  const std::string_view name = parts.front();
  const size_t dot = name.find('.');
  if (dot == std::string_view::npos) {
    return Malformed("starts with " + Quote(name) + ", which has no '.' between job id and vpid");
  }
  OmpiHnpUri uri;
  KDIST_ASSIGN_OR_RETURN(const uint64_t job_id, ParseId(name.substr(0, dot), "job id"));
  KDIST_ASSIGN_OR_RETURN(const uint64_t vpid, ParseId(name.substr(dot + 1), "vpid"));
  uri.job_id = job_id;
  uri.vpid = vpid;

  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string_view entry = parts[i];
    if (entry.rfind("tcp://", 0) == 0) {
      const std::string_view body = entry.substr(6);
      const size_t colon = body.rfind(':');
      if (colon == std::string_view::npos) {
        return Malformed("has the URI " + Quote(entry) + " without a port");
      }
      KDIST_RETURN_IF_ERROR(
          AppendHosts(body.substr(0, colon), body.substr(colon + 1), false, entry, uri.addresses));
    } else if (entry.rfind("tcp6://", 0) == 0) {
      const std::string_view body = entry.substr(7);
      const size_t close = body.find(']');
      if (body.empty() || body.front() != '[' || close == std::string_view::npos ||
          close + 1 >= body.size() || body[close + 1] != ':') {
        return Malformed("has the URI " + Quote(entry) +
                         ", which is not tcp6://[<IPv6>[,<IPv6>...]]:<port>");
      }
      KDIST_RETURN_IF_ERROR(AppendHosts(body.substr(1, close - 1), body.substr(close + 2), true,
                                        entry, uri.addresses));
    } else if (entry.find("://") == std::string_view::npos) {
      return Malformed("has " + Quote(entry) + ", which is not a <transport>://... URI");
    }
  }
  if (uri.addresses.empty()) return Malformed("has no tcp:// or tcp6:// URI");
  return uri;
}

Result<PrrteNamespace> ParsePrrteNamespace(std::string_view text) {
  constexpr std::string_view kPrefix = "prterun-";
  const auto not_found = [&] {
    return NotFound("PMIX_NAMESPACE=" + Quote(text) +
                    " is not prterun-<host>-<pid>@<job>, the form mpirun gives it");
  };
  if (text.substr(0, kPrefix.size()) != kPrefix) return not_found();
  const std::string_view rest = text.substr(kPrefix.size());
  const size_t at = rest.rfind('@');
  if (at == std::string_view::npos) return not_found();
  const std::string_view named = rest.substr(0, at);
  const size_t dash = named.rfind('-');
  if (dash == std::string_view::npos || dash == 0) return not_found();
  Result<uint64_t> pid = ParseDigits(named.substr(dash + 1));
  Result<uint64_t> job = ParseDigits(rest.substr(at + 1));
  if (!pid.ok() || !job.ok()) return not_found();
  const std::string_view host = named.substr(0, dash);
  if (!ParseHost(host).ok()) return not_found();
  return PrrteNamespace{std::string(host), *pid, *job};
}

}  // namespace kdist
