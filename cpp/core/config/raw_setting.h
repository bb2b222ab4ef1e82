// A setting's text before it is parsed, with where it came from (an argument, a
// variable, a detected scheduler), and the words every message about it uses:
// config/resolve.cc and config/job_settings.cc pick each setting with it.
#ifndef KDIST_CONFIG_RAW_SETTING_H_
#define KDIST_CONFIG_RAW_SETTING_H_

#include <optional>
#include <string>
#include <string_view>

#include "base/environment.h"
#include "base/status.h"
#include "config/clusters/detection.h"

namespace kdist {

// A setting before parsing: its text and where it came from.
struct Raw {
  std::string label;     // what the user wrote: an argument or variable name;
                         // for a detected value, how it is shown: SLURM_PROCID="3"
  std::string text;
  std::string source;    // "argument", the variable's name, or "slurm (SLURM_PROCID)"
  bool quote = true;     // integers passed as arguments print unquoted
  std::string detector;  // the detector that gave it, if one did
};

// The argument when it was passed, else `variable` from the environment; nullopt
// when neither is set. `quote_argument`: false for integers and seconds, which
// messages show unquoted when they were passed as arguments.
std::optional<Raw> Pick(const std::optional<std::string>& argument, std::string_view name,
                        const Environment& env, std::string_view variable,
                        bool quote_argument = true);

// Pick, then JAX's own variable for the same setting.
std::optional<Raw> PickWithJax(const std::optional<std::string>& argument, std::string_view name,
                               const Environment& env, std::string_view variable,
                               std::string_view jax_variable, bool quote_argument = true);

// A detected scheduler's value, its source "<detector> (<its variables>)".
std::optional<Raw> FromDetection(const std::optional<DetectedValue>& value,
                                 const std::string& detector);

// "num_processes=0 (argument)", "KERAS_DISTRIBUTION_NUM_PROCESSES=\"two\" (from the
// environment)", "SLURM_PROCID=\"x\" (detected: slurm)".
std::string Describe(const Raw& raw);

// InvalidArgument: "<Describe(raw)>: <reason>".
Status Invalid(const Raw& raw, std::string_view reason);

// "; <hint>" when a detector explained why it left a value out, else "".
std::string Hint(const std::string& hint);

}  // namespace kdist

#endif  // KDIST_CONFIG_RAW_SETTING_H_
