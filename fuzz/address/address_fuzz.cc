// libFuzzer target: address and address-list parsing.
// Property: a parsed address prints to text that parses back to the same address.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "net/address.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kdist::Result<kdist::Address> one = kdist::ParseAddress(text);
  if (one.ok()) {
    kdist::Result<kdist::Address> again = kdist::ParseAddress(one->ToString());
    if (!again.ok() || *again != *one) __builtin_trap();
  } else if (one.status().message().empty()) {
    __builtin_trap();  // every failure explains itself
  }
  kdist::Result<std::vector<kdist::Address>> list = kdist::ParseAddressList(text);
  if (list.ok() && list->empty()) __builtin_trap();
  return 0;
}
