// DeviceCache: the device lists list_devices() returns, per device type,
// until initialize() or shutdown() changes which devices exist.
#ifndef KDIST_DEVICE_CACHE_H_
#define KDIST_DEVICE_CACHE_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kdist {

class DeviceCache {
 public:
  // The cached list for `device_type` ("" for the default type), if any.
  std::optional<std::vector<std::string>> Get(const std::string& device_type) const;

  // The length of the cached list for `device_type`, if any.
  std::optional<size_t> Count(const std::string& device_type) const;

  // The generation to pass to Put: read it before asking the backend, so a
  // list computed across an Invalidate() is never stored.
  uint64_t generation() const;

  // Stores `devices` unless the cache was invalidated since `generation`.
  // Returns whether it was stored.
  bool Put(const std::string& device_type, uint64_t generation,
           std::vector<std::string> devices);

  // Forgets every list.
  void Invalidate();

 private:
  mutable std::mutex mutex_;
  uint64_t generation_ = 0;
  std::map<std::string, std::vector<std::string>, std::less<>> lists_;
};

}  // namespace kdist

#endif  // KDIST_DEVICE_CACHE_H_
