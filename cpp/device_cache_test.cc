#include "device_cache.h"

#include "testing/check.h"

namespace kdist {
namespace {

KDIST_TEST(DeviceCache, StoresPerDeviceType) {
  DeviceCache cache;
  KDIST_EXPECT_FALSE(cache.Get("").has_value());
  KDIST_EXPECT_TRUE(cache.Put("", cache.generation(), {"cpu:0", "cpu:1"}));
  KDIST_EXPECT_TRUE(cache.Put("gpu", cache.generation(), {"gpu:0"}));
  KDIST_ASSERT_TRUE(cache.Get("").has_value());
  KDIST_EXPECT_EQ(cache.Get("")->size(), size_t{2});
  KDIST_EXPECT_EQ(cache.Get("gpu")->front(), std::string("gpu:0"));
  KDIST_EXPECT_FALSE(cache.Get("tpu").has_value());
  KDIST_EXPECT_EQ(*cache.Count(""), size_t{2});
  KDIST_EXPECT_FALSE(cache.Count("tpu").has_value());
}

KDIST_TEST(DeviceCache, InvalidateForgetsEverything) {
  DeviceCache cache;
  KDIST_EXPECT_TRUE(cache.Put("", cache.generation(), {"cpu:0"}));
  cache.Invalidate();
  KDIST_EXPECT_FALSE(cache.Get("").has_value());
}

KDIST_TEST(DeviceCache, ListComputedAcrossAnInvalidateIsNotStored) {
  DeviceCache cache;
  const uint64_t before = cache.generation();
  cache.Invalidate();  // initialize() ran while the caller asked the backend
  KDIST_EXPECT_FALSE(cache.Put("", before, {"cpu:0"}));
  KDIST_EXPECT_FALSE(cache.Get("").has_value());
}

KDIST_TEST(DeviceCache, ReturnsCopies) {
  DeviceCache cache;
  KDIST_EXPECT_TRUE(cache.Put("", cache.generation(), {"cpu:0"}));
  auto copy = cache.Get("");
  copy->push_back("cpu:99");
  KDIST_EXPECT_EQ(cache.Get("")->size(), size_t{1});
}

}  // namespace
}  // namespace kdist
