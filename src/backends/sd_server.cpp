#include "lemon/backends/sd_server.h"

#include <cstdlib>
#include <filesystem>

#include "lemon/backends/out_of_memory.h"

namespace lemon {
SdServer::SdServer(const ModelInfo& model, const RecipeOptions& options,
                   const BackendEnvironment& env)
    : ProcessServer(model, options, device_for_recipe("sd-cpp", backend_or_cpu("sd-cpp", options)),
                    env) {}

BinaryQuery SdServer::binary_query() const {
  return {"sd-cpp", backend_or_cpu("sd-cpp", options()), "sd-server"};
}

std::vector<std::string> SdServer::required_roles() const {
  std::vector<std::string> roles = {"main"};
  for (const char* role : {"text_encoder", "vae", "llm"}) {
    if (model().checkpoints.count(role) != 0) {
      roles.emplace_back(role);
    }
  }
  return roles;
}

Result<std::vector<std::string>> SdServer::build_args(int port) const {
  std::vector<std::string> args = {"--listen-ip", "127.0.0.1", "--listen-port",
                                   std::to_string(port)};
  std::string text_encoder = model().resolved_path("text_encoder");
  if (text_encoder.empty()) {
    text_encoder = model().resolved_path("llm");
  }
  std::string vae = model().resolved_path("vae");
  if (text_encoder.empty() || vae.empty()) {
    args.insert(args.end(), {"-m", model().resolved_path("main")});
  } else {
    args.insert(args.end(), {"--diffusion-model", model().resolved_path("main"), "--llm",
                             text_encoder, "--vae", vae});
  }
  if (verbose()) {
    args.emplace_back("-v");
  }
  return args;
}

std::optional<std::string> SdServer::upstream_path(ApiRoute route) const {
  if (route == ApiRoute::kImageGenerations) {
    return "/v1/images/generations";
  }
  if (route == ApiRoute::kImageEdits || route == ApiRoute::kImageVariations) {
    return "/v1/images/edits";
  }
  return std::nullopt;
}

namespace {

const FormField* field(const std::vector<FormField>& fields, std::string_view name) {
  for (const auto& f : fields) {
    if (f.name == name) {
      return &f;
    }
  }
  return nullptr;
}

// A form value as JSON: a number when it reads as one, else the text.
nlohmann::json form_number(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_number() ? j : nlohmann::json(std::string(text));
}

}  // namespace

std::optional<std::vector<FormField>> SdServer::rewrite_form(
    ApiRoute route, const std::vector<FormField>& fields) const {
  if (route != ApiRoute::kImageEdits && route != ApiRoute::kImageVariations) {
    return std::nullopt;
  }
  const nlohmann::json& opts = options().raw();
  nlohmann::json extra = {{"steps", opts.value("steps", nlohmann::json(20))},
                          {"cfg_scale", opts.value("cfg_scale", nlohmann::json(7.0))}};
  for (const char* key : {"steps", "cfg_scale", "seed"}) {
    if (const FormField* f = field(fields, key)) {
      extra[key] = form_number(f->data);
    }
  }
  std::string prompt = "variation";  // variations take no prompt; sd-server needs one
  if (route == ApiRoute::kImageEdits) {
    const FormField* p = field(fields, "prompt");
    prompt = p != nullptr ? std::string(p->data) : std::string();
  }
  std::vector<FormField> out;
  out.push_back(FormField::text(
      "prompt", prompt + " <sd_cpp_extra_args>" + extra.dump() + "</sd_cpp_extra_args>"));
  const FormField* n = field(fields, "n");
  out.push_back(n != nullptr ? FormField{"n", "", "", n->data, n->storage}
                             : FormField{"n", "", "", "1", nullptr});
  const FormField* size = field(fields, "size");
  out.push_back(size != nullptr
                    ? FormField{"size", "", "", size->data, size->storage}
                    : FormField::text("size", std::to_string(opts.value("width", 512)) + "x" +
                                                  std::to_string(opts.value("height", 512))));
  for (const auto& f : fields) {
    if (f.name == "image" || f.name == "image[]") {
      out.push_back({"image[]", f.filename.empty() ? "image.png" : f.filename,
                     f.content_type.empty() ? "image/png" : f.content_type, f.data, f.storage});
    } else if (f.name == "mask" && route == ApiRoute::kImageEdits) {
      out.push_back({"mask", f.filename.empty() ? "mask.png" : f.filename,
                     f.content_type.empty() ? "image/png" : f.content_type, f.data, f.storage});
    }
  }
  return out;
}

std::optional<std::string> SdServer::rewrite_body(ApiRoute route,
                                                  const nlohmann::json& body) const {
  if (route != ApiRoute::kImageGenerations || !body.is_object()) {
    return std::nullopt;
  }
  const nlohmann::json& opts = options().raw();
  nlohmann::json extra = {
      {"steps", body.contains("steps") ? body["steps"] : opts.value("steps", nlohmann::json(20))},
      {"cfg_scale", body.contains("cfg_scale") ? body["cfg_scale"]
                                               : opts.value("cfg_scale", nlohmann::json(7.0))}};
  if (body.contains("seed")) {
    extra["seed"] = body["seed"];
  }
  nlohmann::json out = body;
  out["prompt"] =
      body.value("prompt", "") + " <sd_cpp_extra_args>" + extra.dump() + "</sd_cpp_extra_args>";
  if (!out.contains("size")) {
    out["size"] =
        std::to_string(opts.value("width", 512)) + "x" + std::to_string(opts.value("height", 512));
  }
  out["response_format"] = "b64_json";
  return out.dump();
}

std::vector<std::pair<std::string, std::string>> SdServer::child_env(
    const std::string& executable) const {
  return release_env(executable);
}

bool SdServer::output_reports_out_of_memory(const std::vector<std::string>& lines) const {
  return ggml_output_reports_out_of_memory(lines);
}

}  // namespace lemon
