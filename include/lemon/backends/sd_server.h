// SdServer: the `sd-cpp` recipe, served by stable-diffusion.cpp's sd-server.
//
//   sd-server --listen-ip 127.0.0.1 --listen-port P -m <model> [-v]
//   sd-server ... --diffusion-model M --llm <text_encoder> --vae V   (split models)
// Readiness is GET /. Generations go to /v1/images/generations; edits and
// variations to /v1/images/edits (multipart), as Lemonade 9.4.1 sends them.
#pragma once

#include "lemon/backends/process_server.h"

namespace lemon {

class SdServer final : public ProcessServer {
 public:
  SdServer(const ModelInfo& model, const RecipeOptions& options, const BackendEnvironment& env);

  Result<std::vector<std::string>> build_args(int port) const override;
  std::optional<std::string> upstream_path(ApiRoute route) const override;
  // sd-server takes steps, cfg_scale and seed inside the prompt as
  // <sd_cpp_extra_args>{...}</sd_cpp_extra_args>; missing values come from the
  // load options, and a missing size from width x height.
  std::optional<std::string> rewrite_body(ApiRoute route,
                                          const nlohmann::json& body) const override;
  // Edits and variations both go to /v1/images/edits as a form of prompt
  // (with the extra arguments; "variation" for variations, which take no
  // prompt), n, size and the images as image[] (plus mask for edits).
  std::optional<std::vector<FormField>> rewrite_form(
      ApiRoute route, const std::vector<FormField>& fields) const override;
  // The weights, plus compute buffers that grow with the image: 2.5 KiB
  // a pixel of the load options' width x height (512x512 by default), as
  // measured on a real sd-server (docs/benchmarks.md "Real backends"). A
  // request for a larger image can go above it.
  DeviceBytes memory_estimate() const override;

 protected:
  BinaryQuery binary_query() const override;
  std::string health_path() const override { return "/"; }
  std::vector<std::string> required_roles() const override;
  bool output_reports_out_of_memory(const std::vector<std::string>& lines) const override;
  std::vector<std::pair<std::string, std::string>> child_env(
      const std::string& executable) const override;
};

}  // namespace lemon
