// The environment snapshot: a copy of the process environment taken once, at
// the edge (Python), and passed to the core. The core never calls getenv, so
// everything that reads the environment is a pure function of this map.
#ifndef KDIST_BASE_ENVIRONMENT_H_
#define KDIST_BASE_ENVIRONMENT_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace kdist {

using Environment = std::map<std::string, std::string, std::less<>>;

// The value of `name`, or nullptr when it is not set.
inline const std::string* Lookup(const Environment& env, std::string_view name) {
  const auto it = env.find(name);
  return it == env.end() ? nullptr : &it->second;
}

}  // namespace kdist

#endif  // KDIST_BASE_ENVIRONMENT_H_
