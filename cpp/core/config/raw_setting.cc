#include "config/raw_setting.h"

#include "base/text.h"

namespace kdist {

std::optional<Raw> Pick(const std::optional<std::string>& argument, std::string_view name,
                        const Environment& env, std::string_view variable,
                        bool quote_argument) {
  if (argument) return Raw{std::string(name), *argument, "argument", quote_argument, ""};
  if (const std::string* value = Lookup(env, variable)) {
    return Raw{std::string(variable), *value, std::string(variable), true, ""};
  }
  return std::nullopt;
}

std::optional<Raw> PickWithJax(const std::optional<std::string>& argument, std::string_view name,
                               const Environment& env, std::string_view variable,
                               std::string_view jax_variable, bool quote_argument) {
  std::optional<Raw> raw = Pick(argument, name, env, variable, quote_argument);
  return raw ? raw : Pick(std::nullopt, name, env, jax_variable);
}

std::optional<Raw> FromDetection(const std::optional<DetectedValue>& value,
                                 const std::string& detector) {
  if (!value) return std::nullopt;
  return Raw{value->shown, value->text, detector + " (" + value->variables + ")", true, detector};
}

std::string Describe(const Raw& raw) {
  if (!raw.detector.empty()) return raw.label + " (detected: " + raw.detector + ")";
  const std::string value = raw.quote ? Quote(raw.text) : raw.text;
  std::string where;
  if (raw.source == "argument") {
    where = "argument";
  } else if (raw.source == raw.label) {
    where = "from the environment";
  } else {
    where = "from " + raw.source;
  }
  return raw.label + "=" + value + " (" + where + ")";
}

Status Invalid(const Raw& raw, std::string_view reason) {
  return InvalidArgument(Describe(raw) + ": " + std::string(reason));
}

std::string Hint(const std::string& hint) { return hint.empty() ? "" : "; " + hint; }


}  // namespace kdist
