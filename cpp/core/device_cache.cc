#include "device_cache.h"

namespace kdist {

std::optional<std::vector<std::string>> DeviceCache::Get(const std::string& device_type) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = lists_.find(device_type);
  if (it == lists_.end()) return std::nullopt;
  return it->second;
}

std::optional<size_t> DeviceCache::Count(const std::string& device_type) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = lists_.find(device_type);
  if (it == lists_.end()) return std::nullopt;
  return it->second.size();
}

uint64_t DeviceCache::generation() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return generation_;
}

bool DeviceCache::Put(const std::string& device_type, uint64_t generation,
                      std::vector<std::string> devices) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (generation != generation_) return false;
  lists_[device_type] = std::move(devices);
  return true;
}

void DeviceCache::Invalidate() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++generation_;
  lists_.clear();
}

}  // namespace kdist
