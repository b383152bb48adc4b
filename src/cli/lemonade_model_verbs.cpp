// lemonade's verbs about models: list, pull, alias, import, export, delete,
// load, unload, pin, unpin. Routes and messages follow Lemonade 11's CLI
// (src/cpp/cli/ at v11.7.0).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <regex>

#include "lemon/cli/commands.h"
#include "lemon/cli/lemonade_commands.h"

namespace lemon::cli {
namespace {

// The keys an imported or exported recipe keeps (11's recipe_import.cpp).
const std::vector<std::string>& recipe_keys() {
  static const std::vector<std::string> keys = {
      "checkpoint",     "checkpoints",     "components", "model_name",     "models",
      "image_defaults", "labels",          "recipe",     "recipe_options", "routing",
      "source",         "registry_source", "size",       "system_prompt",  "version"};
  return keys;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string bare_name(const std::string& id) {
  for (const char* prefix : {"user.", "extra.", "builtin."}) {
    if (id.starts_with(prefix)) {
      return id.substr(std::string(prefix).size());
    }
  }
  return id;
}

int source_rank(const std::string& id) {
  return id.starts_with("user.")      ? 1
         : id.starts_with("extra.")   ? 2
         : id.starts_with("builtin.") ? 3
                                      : 0;
}

// 11's filter: case-insensitive, `*` a wildcard, matched anywhere in the id
// or the id without its prefix.
bool matches(const std::string& filter, const std::string& id) {
  if (filter.empty()) {
    return true;
  }
  std::string pattern;
  for (char c : lower(filter)) {
    if (c == '*') {
      pattern += ".*";
    } else if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      pattern += c;
    } else {
      pattern += std::string("\\") + c;
    }
  }
  const std::regex re(pattern);
  return std::regex_search(lower(id), re) || std::regex_search(lower(bare_name(id)), re);
}

void print_table(const std::vector<nlohmann::json>& rows) {
  std::cout << std::left << std::setw(40) << "Model Name" << std::setw(15) << "Downloaded"
            << std::setw(15) << "Size (GB)"
            << "Details\n"
            << std::string(100, '-') << "\n";
  for (const auto& m : rows) {
    std::string size = "N/A";
    if (m.contains("size") && m["size"].is_number()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%8.2f", m["size"].get<double>());
      size = buf;
    }
    std::cout << std::setw(40) << m.value("id", "") << std::setw(15)
              << (m.value("downloaded", false) ? "Yes" : "No") << std::setw(15) << size
              << m.value("recipe", "-") << "\n";
  }
  std::cout << std::string(100, '-') << "\n";
}

// A new model's name as 11 registers it: `user.` unless already canonical.
Result<std::string> user_name(const std::string& name) {
  if (name.starts_with("extra.") || name.starts_with("builtin.")) {
    return Error(ErrorCode::kInvalidRequest,
                 "'" + name + "' is a reserved name (extra. and builtin. are the server's)");
  }
  return name.starts_with("user.") ? name : "user." + name;
}

int pull_stream(nlohmann::json body, const std::string& shown, const LemonadeTarget& target) {
  body["stream"] = true;
  std::cout << "Pulling model: " << shown << std::endl;
  Status pulled = follow_progress_stream(target.client(), "/api/v1/pull", body, std::cout,
                                         ::isatty(STDOUT_FILENO) == 1);
  if (!pulled.ok()) {
    return fail("Error pulling model: " + pulled.error().message());
  }
  std::cout << "Model pulled successfully: " << shown << std::endl;
  return 0;
}

int add_alias(const std::string& alias, const std::string& model, const LemonadeTarget& target) {
  auto reply = target.client().post("/internal/aliases", {{"alias", alias}, {"target", model}});
  if (!reply.ok()) {
    return fail_request("creating alias", reply, target);
  }
  std::cout << "\u2713 Created alias '" << alias << "' -> '" << reply.json().value("target", model)
            << "'" << std::endl;
  return 0;
}

// owner/repo[:variant]: the variant asked for, else the only one, else a
// choice on a terminal; with no terminal, the list and a failure.
int pull_from_hub(const LemonadeLine& line, const LemonadeTarget& target) {
  std::string repo = line.model;
  std::string variant;
  if (auto colon = repo.find(':'); colon != std::string::npos) {
    variant = repo.substr(colon + 1);
    repo = repo.substr(0, colon);
  }
  auto reply = target.client().get("/api/v1/pull/variants?checkpoint=" + path_segment(repo));
  const nlohmann::json info = reply.json();
  if (!reply.ok() || !info.is_object()) {
    return fail_request("pulling model", reply, target);
  }
  const std::string recipe = info.value("recipe", "llamacpp");
  const std::string suggested = info.value("suggested_name", bare_name(repo));
  nlohmann::json body = {{"recipe", recipe}};
  if (info.value("repo_kind", "gguf") != "gguf") {
    body["model_name"] = "user." + suggested;
    body["checkpoint"] = repo;
    return pull_stream(body, body["model_name"], target);
  }
  std::vector<std::string> names;
  for (const auto& v : info.value("variants", nlohmann::json::array())) {
    names.push_back(v.value("name", ""));
  }
  if (!variant.empty()) {
    for (const auto& n : names) {
      if (lower(n) == lower(variant)) {
        variant = n;
      }
    }
  } else if (names.size() == 1) {
    variant = names.front();
  } else if (::isatty(STDIN_FILENO) == 1) {
    std::cout << "Select a variant:\n";
    for (std::size_t i = 0; i < names.size(); ++i) {
      std::cout << "  " << i + 1 << ") " << names[i] << "\n";
    }
    std::cout << "Enter number, or type any variant name: " << std::flush;
    std::string answer;
    if (!std::getline(std::cin, answer)) {
      return fail("no variant chosen");
    }
    const bool number =
        !answer.empty() && answer.find_first_not_of("0123456789") == std::string::npos;
    variant = number && std::stoul(answer) >= 1 && std::stoul(answer) <= names.size()
                  ? names[std::stoul(answer) - 1]
                  : answer;
  } else {
    std::string list;
    for (const auto& n : names) {
      list += (list.empty() ? "" : ", ") + n;
    }
    return fail("choose a variant: " + repo + ":VARIANT (" + list + ")");
  }
  body["model_name"] = "user." + suggested + "-" + variant;
  body["checkpoint"] = repo + ":" + variant;
  if (info.contains("suggested_labels") && info["suggested_labels"].is_array() &&
      !info["suggested_labels"].empty()) {
    body["labels"] = info["suggested_labels"];
  }
  const auto mmproj = info.value("mmproj_files", nlohmann::json::array());
  if (!mmproj.empty() && mmproj.front().is_string()) {
    body["mmproj"] = mmproj.front();
  }
  if (int code = pull_stream(body, body["model_name"], target); code != 0) {
    return code;
  }
  return line.alias.empty() ? 0 : add_alias(line.alias, body["model_name"], target);
}

}  // namespace

int verb_list(const LemonadeLine& line, const LemonadeTarget& target) {
  auto reply = target.client().get(std::string("/api/v1/models?show_all=") +
                                   (line.downloaded ? "false" : "true"));
  const nlohmann::json answer = reply.json();
  if (!reply.ok() || !answer.is_object() || !answer.contains("data")) {
    return fail_request("listing models", reply, target);
  }
  const std::string filter = line.args.empty() ? "" : line.args.front();
  std::vector<nlohmann::json> local;
  std::vector<nlohmann::json> available;
  for (const auto& m : answer["data"]) {
    if (!matches(filter, m.value("id", ""))) {
      continue;
    }
    (m.value("downloaded", false) ? local : available).push_back(m);
  }
  auto order = [](const nlohmann::json& a, const nlohmann::json& b) {
    const std::string ia = a.value("id", "");
    const std::string ib = b.value("id", "");
    return std::make_tuple(lower(bare_name(ia)), source_rank(ia), ia) <
           std::make_tuple(lower(bare_name(ib)), source_rank(ib), ib);
  };
  std::sort(local.begin(), local.end(), order);
  std::sort(available.begin(), available.end(), order);
  if (line.downloaded) {
    local.insert(local.end(), available.begin(), available.end());
    if (local.empty()) {
      std::cout << "No local models downloaded." << std::endl;
      return 0;
    }
    print_table(local);
    return 0;
  }
  std::cout << "Local\n";
  if (local.empty()) {
    std::cout << "No local models downloaded.\n";
  } else {
    print_table(local);
  }
  std::cout << "\nAvailable for Download\n";
  if (available.empty()) {
    std::cout << "No models available for download.\n";
  } else {
    print_table(available);
  }
  std::cout.flush();
  return 0;
}

int verb_pull(const LemonadeLine& line, const LemonadeTarget& target) {
  const bool manual = !line.checkpoints.empty() || !line.recipe.empty() || !line.labels.empty() ||
                      !line.components.empty();
  if (manual) {
    if (line.recipe != "collection.omni" && (line.checkpoints.empty() || line.recipe.empty())) {
      return fail("a new model needs --checkpoint TYPE CHECKPOINT and --recipe");
    }
    auto name = user_name(line.model);
    if (!name.ok()) {
      return fail(name.error().message());
    }
    nlohmann::json body = {{"model_name", *name}, {"recipe", line.recipe}};
    nlohmann::json checkpoints = nlohmann::json::object();
    for (const auto& [type, checkpoint] : line.checkpoints) {
      checkpoints[type] = checkpoint;
    }
    if (!checkpoints.empty()) {
      body["checkpoints"] = checkpoints;
    }
    if (!line.labels.empty()) {
      body["labels"] = line.labels;
    }
    if (!line.components.empty()) {
      body["components"] = line.components;
    }
    if (int code = pull_stream(body, *name, target); code != 0) {
      return code;
    }
    return line.alias.empty() ? 0 : add_alias(line.alias, *name, target);
  }
  if (line.model.find('/') != std::string::npos) {
    return pull_from_hub(line, target);
  }
  if (int code = pull_stream({{"model_name", line.model}}, line.model, target); code != 0) {
    return code;
  }
  return line.alias.empty() ? 0 : add_alias(line.alias, line.model, target);
}

int verb_alias(const LemonadeLine& line, const LemonadeTarget& target) {
  const ServerClient client = target.client();
  if (line.action == "add") {
    return add_alias(line.args.at(0), line.args.at(1), target);
  }
  if (line.action == "remove") {
    auto reply = client.del("/internal/aliases/" + path_segment(line.args.at(0)));
    if (!reply.ok()) {
      return fail_request("removing alias", reply, target);
    }
    std::cout << "\u2713 Removed alias '" << line.args.at(0) << "'" << std::endl;
    return 0;
  }
  auto reply = client.get("/internal/aliases");
  const nlohmann::json answer = reply.json();
  if (!reply.ok() || !answer.is_object()) {
    return fail_request("listing aliases", reply, target);
  }
  const auto aliases = answer.value("aliases", nlohmann::json::array());
  if (aliases.empty()) {
    std::cout << "No model aliases registered." << std::endl;
    return 0;
  }
  std::cout << "Registered model aliases:\n";
  for (const auto& a : aliases) {
    std::cout << "  " << a.value("alias", "") << " -> " << a.value("target", "") << " ["
              << (a.contains("recipe") && a["recipe"].is_string() ? a["recipe"].get<std::string>()
                                                                  : "-")
              << ", downloaded=" << (a.value("downloaded", false) ? "yes" : "no") << "]\n";
  }
  std::cout.flush();
  return 0;
}

int verb_import(const LemonadeLine& line, const LemonadeTarget& target) {
  std::ifstream in(line.model);
  const nlohmann::json file = nlohmann::json::parse(in, nullptr, false);
  if (!in.is_open() || !file.is_object()) {
    return fail("cannot read a JSON object from " + line.model);
  }
  nlohmann::json body = nlohmann::json::object();
  for (const auto& key : recipe_keys()) {
    if (file.contains(key)) {
      body[key] = file[key];
    }
  }
  if (!body.contains("model_name") && file.contains("id")) {
    body["model_name"] = file["id"];
  }
  const bool collection = body.value("recipe", "").starts_with("collection");
  if (!body.contains("model_name") || !body["model_name"].is_string() || !body.contains("recipe") ||
      (!collection && !body.contains("checkpoint") && !body.contains("checkpoints"))) {
    return fail(line.model + " needs model_name (or id), recipe and checkpoint (or checkpoints)");
  }
  auto name = user_name(body["model_name"].get<std::string>());
  if (!name.ok()) {
    return fail(name.error().message());
  }
  body["model_name"] = *name;
  return pull_stream(body, *name, target);
}

int verb_export(const LemonadeLine& line, const LemonadeTarget& target) {
  auto reply = target.client().get("/api/v1/models/" + path_segment(line.model));
  const nlohmann::json info = reply.json();
  if (!reply.ok() || !info.is_object()) {
    return fail_request("exporting model", reply, target);
  }
  nlohmann::json out = nlohmann::json::object();
  auto name = user_name(info.value("model_name", info.value("id", line.model)));
  out["model_name"] = name.ok() ? *name : "user." + bare_name(line.model);
  for (const auto& key : recipe_keys()) {
    if (key != "model_name" && info.contains(key) && !info[key].is_null()) {
      out[key] = info[key];
    }
  }
  if (line.output.empty()) {
    std::cout << out.dump(4) << std::endl;
    return 0;
  }
  std::ofstream file(line.output);
  file << out.dump(4) << "\n";
  if (!file.good()) {
    return fail("cannot write " + line.output);
  }
  std::cout << "Model info exported to '" << line.output << "'" << std::endl;
  return 0;
}

int verb_delete(const LemonadeLine& line, const LemonadeTarget& target) {
  std::cout << "Deleting model: " << line.model << std::endl;
  return post_and_report(target, "/api/v1/delete", {{"model_name", line.model}}, "deleting model",
                         "Model deleted successfully: " + line.model);
}

int pull_if_needed_and_load(const std::string& model, nlohmann::json load_body,
                            const LemonadeTarget& target) {
  const ServerClient client = target.client();
  auto info = client.get("/api/v1/models/" + path_segment(model));
  if (!info.ok()) {
    return fail_request("loading model", info, target);
  }
  if (!info.json().value("downloaded", false)) {
    std::cout << "Model '" << model << "' is not downloaded. Pulling..." << std::endl;
    if (int code = pull_stream({{"model_name", model}, {"do_not_upgrade", true}}, model, target);
        code != 0) {
      return code;
    }
  }
  load_body["model_name"] = model;
  std::cout << "Loading model: " << model << std::endl;
  return post_and_report(target, "/api/v1/load", load_body, "loading model",
                         "Model loaded successfully!");
}

int verb_load(const LemonadeLine& line, const LemonadeTarget& target) {
  nlohmann::json body = line.load_options;
  body["save_options"] = line.save_options;
  if (line.pinned) {
    body["pinned"] = true;
  }
  return pull_if_needed_and_load(line.model, body, target);
}

int verb_unload(const LemonadeLine& line, const LemonadeTarget& target) {
  std::cout << (line.model.empty() ? std::string("Unloading all models")
                                   : "Unloading model: " + line.model)
            << std::endl;
  nlohmann::json body = nlohmann::json::object();
  if (!line.model.empty()) {
    body["model_name"] = line.model;
  }
  return post_and_report(target, "/api/v1/unload", body, "unloading model",
                         "Model unloaded successfully!");
}

int verb_pin(const LemonadeLine& line, const LemonadeTarget& target) {
  return post_and_report(target, "/internal/pin", {{"model_name", line.model}, {"pinned", true}},
                         "pinning model", "Model pinned successfully!");
}

int verb_unpin(const LemonadeLine& line, const LemonadeTarget& target) {
  return post_and_report(target, "/internal/pin", {{"model_name", line.model}, {"pinned", false}},
                         "unpinning model", "Model unpinned successfully!");
}

}  // namespace lemon::cli
