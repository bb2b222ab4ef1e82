// kdist._core_bench: the roll call's wire codec, for benchmarks/rollcall.py,
// which plays many processes from one. Not part of the package's surface:
// `import kdist` never imports it. The types it shares with kdist._core
// (ClusterSpec, Reply) are bound there; importing this module imports that one.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>
#include <string>
#include <string_view>

#include "cluster_spec.h"
#include "errors.h"
#include "roll_call_options.h"
#include "roll_call_wire.h"

namespace nb = nanobind;

namespace kdist {
namespace {

nb::bytes EncodeHelloPy(const ClusterSpec& spec, const std::string& jax_version,
                        const std::string& host, int64_t pid, std::optional<std::string> token,
                        std::optional<nb::bytes> nonce) {
  Hello hello = MakeHello(spec, Identity{jax_version, host, pid});
  if (token) hello.token = *token;
  Nonce challenge{};
  if (nonce) {
    if (nonce->size() != challenge.size()) {
      bindings::RaiseIfError(InvalidArgument("a nonce is " + std::to_string(challenge.size()) +
                                             " bytes; received " +
                                             std::to_string(nonce->size())));
    }
    for (size_t i = 0; i < challenge.size(); ++i) {
      challenge[i] = static_cast<uint8_t>(nonce->c_str()[i]);
    }
  } else if (!hello.token.empty()) {
    bindings::RaiseIfError(
        InvalidArgument("a hello with a token answers a challenge: give the challenge's nonce"));
  }
  const std::string frame = EncodeSignedHello(hello, challenge);
  return nb::bytes(frame.data(), frame.size());
}

Reply DecodeReplyPy(const nb::bytes& frame) {
  return bindings::ValueOrRaise(DecodeReply(std::string_view(frame.c_str(), frame.size())));
}

size_t FrameSizePy(const nb::bytes& header) {
  const FrameHeader h = bindings::ValueOrRaise(
      DecodeFrameHeader(std::string_view(header.c_str(), header.size())));
  return h.frame_size();
}

}  // namespace
}  // namespace kdist

NB_MODULE(_core_bench, m) {
  using namespace kdist;
  nb::module_::import_("kdist._core");  // binds ClusterSpec and Reply
  m.doc() = "The roll call's wire codec, for kdist's benchmarks only.";
  m.def("encode_hello", &EncodeHelloPy, nb::arg("spec"), nb::arg("jax_version"), nb::arg("host"),
        nb::arg("pid"), nb::arg("token").none() = nb::none(), nb::arg("nonce").none() = nb::none(),
        "The hello frame a process with this spec sends (token: the spec's unless given), with "
        "a MAC over the challenge's 16-byte nonce when it has a token.");
  m.def("decode_reply", &DecodeReplyPy, nb::arg("frame"),
        "Decodes one whole reply frame from process 0; raises kdist.ConfigError when it is "
        "malformed.");
  m.def("frame_size", &FrameSizePy, nb::arg("header"),
        "The whole size of the frame whose header starts `header` (FRAME_HEADER_SIZE bytes).");
  m.attr("FRAME_HEADER_SIZE") = kFrameHeaderSize;
}
