// libFuzzer target: Open MPI 4's OMPI_MCA_orte_hnp_uri.
// Properties: a parsed URI has at least one address, each with a valid port.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/clusters/ompi_uri.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kdist::Result<kdist::OmpiHnpUri> uri = kdist::ParseOmpiHnpUri(text);
  if (uri.ok()) {
    if (uri->addresses.empty()) __builtin_trap();
    for (const kdist::Address& address : uri->addresses) {
      if (address.port == 0 || address.host.empty()) __builtin_trap();
    }
  } else if (uri.status().message().empty()) {
    __builtin_trap();
  }
  return 0;
}
