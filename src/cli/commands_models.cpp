// list, pull, delete, load, unload and ps: thin calls of the router's routes.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "lemon/cli/commands.h"

namespace lemon::cli {
namespace {

namespace fs = std::filesystem;

std::string model_type(const nlohmann::json& model) {
  if (!model.contains("labels") || !model["labels"].is_array()) {
    return "llm";
  }
  for (const auto& l : model["labels"]) {
    if (!l.is_string()) {
      continue;
    }
    const auto& s = l.get_ref<const std::string&>();
    if (s == "embeddings" || s == "embedding") {
      return "embedding";
    }
    if (s == "reranking") {
      return "reranking";
    }
    if (s == "audio") {
      return "audio";
    }
    if (s == "image") {
      return "image";
    }
  }
  return "llm";
}

std::string size_text(const nlohmann::json& model) {
  if (!model.contains("size") || !model["size"].is_number()) {
    return "-";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", model["size"].get<double>());
  return buf;
}

std::vector<std::string> loaded_names(const ServerClient& client) {
  std::vector<std::string> names;
  auto health = client.get("/api/v1/health").json();
  if (health.is_object() && health.contains("all_models_loaded") &&
      health["all_models_loaded"].is_array()) {
    for (const auto& m : health["all_models_loaded"]) {
      names.push_back(m.value("model_name", ""));
      if (m.contains("id") && m["id"].is_string()) {
        names.push_back(m["id"].get<std::string>());  // as GET models lists it
      }
    }
  }
  return names;
}

std::string hf_hub_cache() {
  if (const char* v = std::getenv("HF_HUB_CACHE"); v != nullptr && *v != '\0') {
    return v;
  }
  if (const char* v = std::getenv("HF_HOME"); v != nullptr && *v != '\0') {
    return std::string(v) + "/hub";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/tmp") + "/.cache/huggingface/hub";
}

// Lemonade 9.4.1's local import: the folder's files go to
// <hub>/models--<name>, where the server's local_import registration looks.
Status copy_local_checkpoint(const std::string& model, const fs::path& source) {
  std::string clean = model.substr(5);
  std::replace(clean.begin(), clean.end(), '/', '-');
  fs::path dest = fs::path(hf_hub_cache()) / ("models--" + clean);
  std::cout << "Copying files to: " << dest.string() << std::endl;
  std::error_code ec;
  fs::create_directories(dest, ec);
  if (fs::is_directory(source, ec)) {
    fs::copy(source, dest, fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
  } else {
    fs::copy_file(source, dest / source.filename(), fs::copy_options::overwrite_existing, ec);
  }
  if (ec) {
    return Error(ErrorCode::kInternal,
                 "cannot copy " + source.string() + " to " + dest.string() + ": " + ec.message());
  }
  return ok_status();
}

// The /pull body: a JSON file's contents, or the name and registration flags.
Result<nlohmann::json> pull_body(const CommandLine& cl, bool local_import) {
  nlohmann::json body = nlohmann::json::object();
  fs::path file(cl.model);
  std::error_code ec;
  if (file.extension() == ".json" && fs::is_regular_file(file, ec)) {
    std::ifstream in(file);
    body = nlohmann::json::parse(in, nullptr, false);
    if (!body.is_object()) {
      return Error(ErrorCode::kInvalidRequest, cl.model + " is not a valid JSON file.");
    }
    if (body.contains("id")) {
      body["model"] = body["id"];
      body.erase("id");
    }
    if (body.contains("checkpoints")) {
      body.erase("checkpoint");
    }
    if (!body.contains("model") && !body.contains("model_name")) {
      return Error(ErrorCode::kInvalidRequest, cl.model + " names no model ('id' or 'model').");
    }
    return body;
  }
  body["model"] = cl.model;
  if (!cl.checkpoint.empty() && !local_import) {
    body["checkpoint"] = cl.checkpoint;
  }
  if (!cl.recipe.empty()) {
    body["recipe"] = cl.recipe;
  }
  for (auto [flag, key] :
       {std::pair{cl.reasoning, "reasoning"}, std::pair{cl.vision, "vision"},
        std::pair{cl.embedding, "embedding"}, std::pair{cl.reranking, "reranking"}}) {
    if (flag) {
      body[key] = true;
    }
  }
  if (!cl.mmproj.empty()) {
    body["mmproj"] = cl.mmproj;
  }
  return body;
}

int load(const CommandLine& cl, const ServerClient& client) {
  nlohmann::json body = cl.load_options;
  body["model_name"] = cl.model;
  if (cl.save_options) {
    body["save_options"] = true;
  }
  if (cl.pinned) {
    body["pinned"] = true;
  }
  if (cl.priority) {
    body["priority"] = *cl.priority;
  }
  std::cout << "Loading model " << cl.model << "..." << std::endl;
  auto reply = client.post("/api/v1/load", body);
  if (!reply.ok()) {
    return fail("Failed to load model: " + reply.error_text());
  }
  std::cout << "Model loaded successfully: " << cl.model << std::endl;
  return 0;
}

int unload(const CommandLine& cl, const ServerClient& client) {
  nlohmann::json body = nlohmann::json::object();
  if (!cl.model.empty()) {
    body["model_name"] = cl.model;
  }
  auto reply = client.post("/api/v1/unload", body);
  if (!reply.ok()) {
    return fail("Failed to unload: " + reply.error_text());
  }
  std::cout << (cl.model.empty() ? std::string("All models unloaded")
                                 : "Model unloaded: " + cl.model)
            << std::endl;
  return 0;
}

int set_pinned(const CommandLine& cl, const ServerClient& client, bool pinned) {
  auto reply = client.post("/internal/pin", {{"model_name", cl.model}, {"pinned", pinned}});
  if (!reply.ok()) {
    return fail(std::string("Failed to ") + (pinned ? "pin" : "unpin") + " " + cl.model + ": " +
                reply.error_text());
  }
  std::cout << "Model " << (pinned ? "pinned: " : "unpinned: ") << cl.model << std::endl;
  return 0;
}

int ps(const CommandLine& cl, const ServerClient& client) {
  auto reply = get_object_with(client, "/api/v1/health", "all_models_loaded",
                               nlohmann::json::value_t::array, "the server's health");
  if (!reply.ok()) {
    return fail(reply.error().message());
  }
  const nlohmann::json& health = *reply;
  nlohmann::json rows = nlohmann::json::array();
  double now = static_cast<double>(std::time(nullptr));
  if (health.contains("all_models_loaded") && health["all_models_loaded"].is_array()) {
    for (const auto& m : health["all_models_loaded"]) {
      double last_use = m.value("last_use", now);
      rows.push_back({{"model", m.value("model_name", "")},
                      {"type", m.value("type", "")},
                      {"device", m.value("device", "")},
                      {"recipe", m.value("recipe", "")},
                      {"pid", m.contains("pid") ? m["pid"] : nlohmann::json(nullptr)},
                      {"in_flight", m.value("in_flight", 0)},
                      {"state", m.value("state", "")},
                      {"pinned", m.value("pinned", false)},
                      {"priority", m.value("priority", 0)},
                      {"idle_seconds", std::max(0.0, now - last_use)}});
    }
  }
  if (cl.json) {
    std::cout << rows.dump(2) << std::endl;
    return 0;
  }
  std::cout << std::left << std::setw(40) << "MODEL" << std::setw(11) << "TYPE" << std::setw(9)
            << "DEVICE" << std::setw(11) << "RECIPE" << std::setw(9) << "PID" << std::setw(10)
            << "IN FLIGHT"
            << "IDLE"
            << "\n";
  for (const auto& r : rows) {
    std::string pid = r["pid"].is_number() ? std::to_string(r["pid"].get<long long>()) : "-";
    auto idle = static_cast<long long>(r["idle_seconds"].get<double>());
    std::string idle_text = r["in_flight"].get<int>() > 0 ? "busy"
                            : idle < 60                   ? std::to_string(idle) + "s"
                            : idle < 3600                 ? std::to_string(idle / 60) + "m"
                                                          : std::to_string(idle / 3600) + "h";
    std::cout << std::left << std::setw(40) << r["model"].get<std::string>() << std::setw(11)
              << r["type"].get<std::string>() << std::setw(9) << r["device"].get<std::string>()
              << std::setw(11) << r["recipe"].get<std::string>() << std::setw(9) << pid
              << std::setw(10) << r["in_flight"].get<int>() << idle_text << "\n";
  }
  std::cout.flush();
  return 0;
}

// load, unload and ps act on a running server only (a temporary one would
// forget at once what they did).
template <typename Fn>
int with_running_server(CliContext& ctx, Fn&& fn) {
  auto running = find_running_server(ctx);
  if (!running) {
    return fail("Server is not running; start it with: lemonade-server serve");
  }
  return fn(ServerClient(ctx.host, running->port, ctx.api_key));
}

}  // namespace

int cmd_list(const CommandLine& cl, CliContext& ctx) {
  return with_session(ctx, [&](const ServerClient& client) {
    auto reply = get_object_with(client, "/api/v1/models?show_all=true", "data",
                                 nlohmann::json::value_t::array, "the models");
    if (!reply.ok()) {
      return fail(reply.error().message());
    }
    const nlohmann::json& models = *reply;
    auto loaded = loaded_names(client);
    auto is_loaded = [&](const std::string& id) {
      return std::find(loaded.begin(), loaded.end(), id) != loaded.end();
    };
    if (cl.json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& m : models["data"]) {
        std::string id = m.value("id", "");
        out.push_back({{"name", id},
                       {"recipe", m.value("recipe", "")},
                       {"type", model_type(m)},
                       {"size_gb", m.contains("size") ? m["size"] : nlohmann::json(nullptr)},
                       {"downloaded", m.value("downloaded", false)},
                       {"loaded", is_loaded(id)}});
      }
      std::cout << out.dump(2) << std::endl;
      return 0;
    }
    std::cout << std::left << std::setw(40) << "Model Name" << std::setw(12) << "Downloaded"
              << std::setw(14) << "Recipe" << std::setw(11) << "Type" << std::setw(11) << "Size"
              << "Loaded"
              << "\n"
              << std::string(100, '-') << "\n";
    for (const auto& m : models["data"]) {
      std::string id = m.value("id", "unknown");
      std::cout << std::left << std::setw(40) << id << std::setw(12)
                << (m.value("downloaded", false) ? "Yes" : "No") << std::setw(14)
                << m.value("recipe", "-") << std::setw(11) << model_type(m) << std::setw(11)
                << size_text(m) << (is_loaded(id) ? "Yes" : "No") << "\n";
    }
    std::cout << std::string(100, '-') << std::endl;
    return 0;
  });
}

int cmd_pull(const CommandLine& cl, CliContext& ctx) {
  bool local_import = !cl.checkpoint.empty() && fs::path(cl.checkpoint).is_absolute();
  if (local_import) {
    std::error_code ec;
    if (!fs::exists(cl.checkpoint, ec)) {
      return fail("Local path does not exist: " + cl.checkpoint);
    }
    if (!cl.model.starts_with("user.")) {
      return fail("When importing from a local path, model name must start with 'user.'");
    }
    if (cl.recipe.empty()) {
      return fail("--recipe is required when importing from a local path");
    }
    std::cout << "Importing model from local path: " << cl.checkpoint << std::endl;
  }
  auto body = pull_body(cl, local_import);
  if (!body.ok()) {
    return fail(body.error().message());
  }
  std::cout << (local_import ? "Registering model: " : "Pulling model: ") << cl.model << std::endl;
  return with_session(ctx, [&](const ServerClient& client) {
    if (local_import) {
      if (Status copied = copy_local_checkpoint(cl.model, cl.checkpoint); !copied.ok()) {
        return fail(copied.error().message());
      }
      nlohmann::json request = *body;
      request["local_import"] = true;
      auto reply = client.post("/api/v1/pull", request);
      if (!reply.ok()) {
        return fail("Error pulling model: " + reply.error_text());
      }
      std::cout << "Model imported successfully: " << cl.model << std::endl;
      return 0;
    }
    nlohmann::json request = *body;
    request["stream"] = true;
    Status pulled = follow_progress_stream(client, "/api/v1/pull", request, std::cout,
                                           ::isatty(STDOUT_FILENO) == 1);
    if (!pulled.ok()) {
      return fail("Error pulling model: " + pulled.error().message());
    }
    std::cout << "Model pulled successfully: " << request.value("model", cl.model) << std::endl;
    return 0;
  });
}

int cmd_delete(const CommandLine& cl, CliContext& ctx) {
  std::cout << "Deleting model: " << cl.model << std::endl;
  return with_session(ctx, [&](const ServerClient& client) {
    auto reply = client.post("/api/v1/delete", {{"model", cl.model}});
    if (!reply.ok()) {
      return fail("Error deleting model: " + reply.error_text());
    }
    std::cout << "Model deleted successfully: " << cl.model << std::endl;
    return 0;
  });
}

int cmd_load(const CommandLine& cl, CliContext& ctx) {
  return with_running_server(ctx, [&](const ServerClient& client) { return load(cl, client); });
}

int cmd_unload(const CommandLine& cl, CliContext& ctx) {
  return with_running_server(ctx, [&](const ServerClient& client) { return unload(cl, client); });
}

int cmd_pin(const CommandLine& cl, CliContext& ctx) {
  return with_running_server(
      ctx, [&](const ServerClient& client) { return set_pinned(cl, client, true); });
}

int cmd_unpin(const CommandLine& cl, CliContext& ctx) {
  return with_running_server(
      ctx, [&](const ServerClient& client) { return set_pinned(cl, client, false); });
}

int cmd_ps(const CommandLine& cl, CliContext& ctx) {
  return with_running_server(ctx, [&](const ServerClient& client) { return ps(cl, client); });
}

}  // namespace lemon::cli
