// recipes: the backend table from /system-info, or /install and /uninstall.
#include <unistd.h>

#include <iomanip>
#include <iostream>

#include "lemon/cli/commands.h"

namespace lemon::cli {
namespace {

std::optional<std::pair<std::string, std::string>> split_pair(const std::string& spec) {
  auto colon = spec.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) {
    return std::nullopt;
  }
  return std::pair{spec.substr(0, colon), spec.substr(colon + 1)};
}

int install(const CommandLine& cl, CliContext& ctx) {
  auto pair = split_pair(cl.install);
  if (!pair) {
    return fail("--install requires format 'recipe:backend' (e.g., llamacpp:vulkan)");
  }
  std::cout << "Installing backend: " << pair->first << ":" << pair->second << std::endl;
  return with_session(ctx, [&](const ServerClient& client) {
    nlohmann::json body = {{"recipe", pair->first}, {"backend", pair->second}, {"stream", true}};
    Status done = follow_progress_stream(client, "/api/v1/install", body, std::cout,
                                         ::isatty(STDOUT_FILENO) == 1);
    if (!done.ok()) {
      return fail("Error installing backend: " + done.error().message());
    }
    std::cout << "Backend installed successfully: " << pair->first << ":" << pair->second
              << std::endl;
    return 0;
  });
}

int uninstall(const CommandLine& cl, CliContext& ctx) {
  auto pair = split_pair(cl.uninstall);
  if (!pair) {
    return fail("--uninstall requires format 'recipe:backend' (e.g., llamacpp:vulkan)");
  }
  std::cout << "Uninstalling backend: " << pair->first << ":" << pair->second << std::endl;
  return with_session(ctx, [&](const ServerClient& client) {
    auto reply =
        client.post("/api/v1/uninstall", {{"recipe", pair->first}, {"backend", pair->second}});
    if (!reply.ok()) {
      return fail("Error uninstalling backend: " + reply.error_text());
    }
    std::cout << "Backend uninstalled successfully: " << pair->first << ":" << pair->second
              << std::endl;
    return 0;
  });
}

}  // namespace

void print_backends_table(const nlohmann::json& recipes, bool hide_unsupported) {
  std::cout << std::left << std::setw(20) << "Recipe" << std::setw(12) << "Backend" << std::setw(16)
            << "Status" << std::setw(46) << "Message/Version"
            << "Action\n"
            << std::string(148, '-') << "\n";
  for (const auto& [recipe, entry] : recipes.items()) {
    if (!entry.contains("backends") || !entry["backends"].is_object() ||
        entry["backends"].empty()) {
      if (hide_unsupported) {
        continue;
      }
      std::cout << std::left << std::setw(20) << recipe << std::setw(12) << "-" << std::setw(16)
                << "unsupported" << std::setw(46) << "No backend definitions"
                << "-\n";
      continue;
    }
    bool first = true;
    for (const auto& [backend, b] : entry["backends"].items()) {
      std::string state = b.value("state", "unsupported");
      if (hide_unsupported && state == "unsupported") {
        continue;
      }
      std::string version = b.value("version", "");
      std::string message = b.value("message", "");
      std::string info_col = state == "installed" && !version.empty() ? version
                             : !message.empty()                       ? message
                                                                      : "-";
      std::string action = b.value("action", "");
      std::cout << std::left << std::setw(20) << (first ? recipe : "") << std::setw(12) << backend
                << std::setw(16) << state << std::setw(46) << info_col << " "
                << (action.empty() ? "-" : action) << "\n";
      first = false;
    }
  }
  std::cout << std::string(148, '-') << std::endl;
}

int cmd_recipes(const CommandLine& cl, CliContext& ctx) {
  if (!cl.install.empty()) {
    return install(cl, ctx);
  }
  if (!cl.uninstall.empty()) {
    return uninstall(cl, ctx);
  }
  return with_session(ctx, [&](const ServerClient& client) {
    auto info = get_object_with(client, "/api/v1/system-info", "recipes",
                                nlohmann::json::value_t::object, "the server's system info");
    if (!info.ok()) {
      return fail(info.error().message());
    }
    const auto& recipes = (*info)["recipes"];
    if (cl.json) {
      std::cout << recipes.dump(2) << std::endl;
      return 0;
    }
    print_backends_table(recipes, /*hide_unsupported=*/false);
    return 0;
  });
}

}  // namespace lemon::cli
