#include "fake_hub.h"

#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "fake_task_queue.h"
#include "hub_answers.h"
#include "hub_control.h"
#include "hub_files.h"

namespace fake {
namespace {

using json = nlohmann::json;
using hub::deny;
using hub::escape_path;
using hub::FileInfo;
using hub::Hashes;
using hub::hashes_of_text;
using hub::HubControl;
using hub::is_lfs;
using hub::is_repo_part;
using hub::ListingKnobs;
using hub::not_found;
using hub::parse_rule;
using hub::parse_u64;
using hub::reply_json;
using hub::RepoFiles;
using hub::Rule;
using hub::serve_bytes;

// The repositories the hub serves and the knobs tests set on it.
struct Hub {
  RepoFiles repos;
  HubControl control;
};

// 401 (no token) or 403 (a wrong one) for a gated repository; 0 when allowed.
int auth_status(const RepoFiles& repos, const std::string& repo, const httplib::Request& req) {
  const std::string token = repos.token_of(repo);
  if (token.empty()) {
    return 0;
  }
  if (!req.has_header("Authorization")) {
    return 401;
  }
  return req.get_header_value("Authorization") == "Bearer " + token ? 0 : 403;
}

std::string repo_of(const httplib::Request& req) {
  return req.matches[1].str() + "/" + req.matches[2].str();
}

bool valid_repo(const httplib::Request& req) {
  return is_repo_part(req.matches[1].str()) && is_repo_part(req.matches[2].str());
}

json sibling(const std::string& rel, std::uint64_t size, const Hashes& h, bool lfs, bool blobs) {
  json s = {{"rfilename", rel}};
  if (blobs) {
    s["blobId"] = h.blob_id;
    s["size"] = size;
    if (lfs) {
      s["lfs"] = {{"sha256", h.sha256}, {"size", size}, {"pointerSize", 134}};
    }
  }
  return s;
}

void add_routes(httplib::Server& server, Hub& hub, const std::string& base) {
  // httplib would apply a Range header itself to every answer with a body,
  // cutting up JSON errors too; the hub reads the header itself instead.
  server.set_pre_routing_handler([](const httplib::Request& req, httplib::Response&) {
    const_cast<httplib::Request&>(req).ranges.clear();  // NOLINT: req is not const in httplib
    return httplib::Server::HandlerResponse::Unhandled;
  });

  // -- control --

  server.Post("/_fake/knobs", [&hub](const httplib::Request& req, httplib::Response& res) {
    try {
      json body = json::parse(req.body);
      const json& rules = body.is_object() ? body.at("rules") : body;
      if (!rules.is_array()) {
        throw std::invalid_argument("\"rules\" must be an array");
      }
      std::vector<Rule> parsed;
      for (const json& r : rules) {
        parsed.push_back(parse_rule(r));
      }
      hub.control.set_rules(std::move(parsed));
      reply_json(res, 200, {{"ok", true}});
    } catch (const std::exception& e) {
      reply_json(res, 400, {{"error", std::string("fake-hub: bad knobs: ") + e.what()}});
    }
  });
  server.Get("/_fake/log", [&hub](const httplib::Request&, httplib::Response& res) {
    reply_json(res, 200, hub.control.log());
  });
  server.Post("/_fake/log/clear", [&hub](const httplib::Request&, httplib::Response& res) {
    hub.control.clear_log();
    reply_json(res, 200, {{"ok", true}});
  });
  server.Get("/_fake/wait", [&hub](const httplib::Request& req, httplib::Response& res) {
    const std::string event = req.get_param_value("event");
    std::uint64_t timeout_ms = 30000;
    std::uint64_t count = 1;
    if ((event != "stalled" && event != "request") ||
        (req.has_param("timeout_ms") &&
         !parse_u64(req.get_param_value("timeout_ms"), timeout_ms)) ||
        (req.has_param("count") && !parse_u64(req.get_param_value("count"), count))) {
      reply_json(res, 400,
                 {{"error",
                   "fake-hub: wait needs event=stalled|request, and numbers "
                   "for timeout_ms and count"}});
      return;
    }
    const std::string path = req.has_param("path") ? req.get_param_value("path") : "*";
    const bool ok = hub.control.wait(event, path, static_cast<std::int64_t>(count),
                                     std::chrono::milliseconds(timeout_ms));
    reply_json(res, ok ? 200 : 408, {{"ok", ok}});
  });

  // -- the hub --

  auto listing = [&hub](const httplib::Request& req, httplib::Response& res) {
    const std::string repo = repo_of(req);
    const std::string rev = req.matches.size() > 3 ? req.matches[3].str() : "main";
    ListingKnobs knobs = hub.control.listing_knobs(repo);
    if (knobs.api_status != 0) {
      hub.control.log_request(req, knobs.api_status, repo);
      reply_json(res, knobs.api_status, {{"error", "fake-hub: api_status knob for " + repo}});
      if (knobs.api_status == 404) {
        res.set_header("X-Error-Code", "RepoNotFound");
      }
      return;
    }
    if (!valid_repo(req) || !hub.repos.repo_exists(repo)) {
      hub.control.log_request(req, 404, repo);
      not_found(res, "RepoNotFound", "Repository not found");
      return;
    }
    if (int denied = auth_status(hub.repos, repo, req)) {
      hub.control.log_request(req, denied, repo);
      deny(res, denied, repo);
      return;
    }
    const std::vector<FileInfo> files = hub.repos.files(repo);
    const std::string commit = RepoFiles::commit_of(files);
    if (rev != "main" && rev != commit) {
      hub.control.log_request(req, 404, repo);
      not_found(res, "RevisionNotFound", "Invalid rev id: " + rev);
      return;
    }
    hub.control.log_request(req, 200, repo);
    const bool blobs = req.get_param_value("blobs") == "true";
    json siblings = json::array();
    for (const FileInfo& f : files) {
      std::uint64_t size = knobs.declared_size.value_or(f.size);
      if (auto it = knobs.file_declared_size.find(f.rel); it != knobs.file_declared_size.end()) {
        size = it->second;
      }
      siblings.push_back(sibling(f.rel, size, f.hashes, f.lfs, blobs));
    }
    for (const std::string& extra : knobs.extra_siblings) {
      siblings.push_back(sibling(extra, 1, hashes_of_text(extra), is_lfs(extra, 1), blobs));
    }
    const bool gated = !hub.repos.token_of(repo).empty();
    reply_json(res, 200,
               {{"_id", commit.substr(0, 24)},
                {"id", repo},
                {"modelId", repo},
                {"sha", commit},
                {"private", false},
                {"gated", gated ? json("auto") : json(false)},
                {"siblings", siblings}});
  };
  // The hub's model search (GET /api/models?search=&filter=&limit=&sort=),
  // as huggingface_hub's list_models reads it: an array of {id, modelId,
  // downloads, likes, tags, pipeline_tag}; "filter=gguf" keeps repositories
  // holding a .gguf file.
  server.Get("/api/models", [&hub](const httplib::Request& req, httplib::Response& res) {
    hub.control.log_request(req, 200, "");
    const std::string search = req.get_param_value("search");
    const bool gguf_only = req.get_param_value("filter") == "gguf";
    const int limit = req.has_param("limit") ? std::stoi(req.get_param_value("limit")) : 1000;
    auto lower = [](std::string s) {
      std::transform(s.begin(), s.end(), s.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return s;
    };
    json out = json::array();
    for (const std::string& repo : hub.repos.repos()) {
      if (static_cast<int>(out.size()) >= limit) {
        break;
      }
      if (lower(repo).find(lower(search)) == std::string::npos) {
        continue;
      }
      const auto files = hub.repos.files(repo);
      const bool has_gguf = std::any_of(files.begin(), files.end(), [](const FileInfo& f) {
        return f.rel.size() > 5 && f.rel.substr(f.rel.size() - 5) == ".gguf";
      });
      if (gguf_only && !has_gguf) {
        continue;
      }
      out.push_back({{"id", repo},
                     {"modelId", repo},
                     {"downloads", 0},
                     {"likes", 0},
                     {"tags", has_gguf ? json::array({"gguf"}) : json::array()},
                     {"pipeline_tag", "text-generation"}});
    }
    reply_json(res, 200, out);
  });
  server.Get(R"(/api/models/([^/]+)/([^/]+)/revision/([^/]+))", listing);
  server.Get(R"(/api/models/([^/]+)/([^/]+))", listing);

  server.Get(R"(/([^/]+)/([^/]+)/resolve/([^/]+)/(.+))", [&hub, &base](const httplib::Request& req,
                                                                       httplib::Response& res) {
    const std::string repo = repo_of(req);
    const std::string rev = req.matches[3].str();
    const std::string rel = req.matches[4].str();
    const std::string key = repo + "/" + rel;
    if (!valid_repo(req) || !hub.repos.repo_exists(repo)) {
      hub.control.log_request(req, 404, key);
      not_found(res, "RepoNotFound", "Repository not found");
      return;
    }
    if (int denied = auth_status(hub.repos, repo, req)) {
      hub.control.log_request(req, denied, key);
      deny(res, denied, repo);
      return;
    }
    const std::vector<FileInfo> files = hub.repos.files(repo);
    const std::string commit = RepoFiles::commit_of(files);
    if (rev != "main" && rev != commit) {
      hub.control.log_request(req, 404, key);
      not_found(res, "RevisionNotFound", "Invalid rev id: " + rev);
      return;
    }
    auto f =
        std::find_if(files.begin(), files.end(), [&](const FileInfo& x) { return x.rel == rel; });
    if (f == files.end()) {
      hub.control.log_request(req, 404, key);
      not_found(res, "EntryNotFound", "Entry not found");
      return;
    }
    res.set_header("X-Repo-Commit", commit);
    if (!f->lfs) {
      serve_bytes(hub.control, req, res, key, *f, f->hashes.blob_id);
      return;
    }
    hub.control.log_request(req, 302, key);
    res.status = 302;
    res.set_header("Location", base + "/_cdn/" + repo + "/" + commit + "/" + escape_path(rel));
    res.set_header("X-Linked-Etag", "\"" + f->hashes.sha256 + "\"");
    res.set_header("X-Linked-Size", std::to_string(f->size));
  });

  server.Get(R"(/_cdn/([^/]+)/([^/]+)/([0-9a-f]{40})/(.+))",
             [&hub](const httplib::Request& req, httplib::Response& res) {
               const std::string repo = repo_of(req);
               const std::string rel = req.matches[4].str();
               const std::string key = repo + "/" + rel;
               if (!valid_repo(req) || !hub.repos.repo_exists(repo)) {
                 hub.control.log_request(req, 404, key);
                 not_found(res, "RepoNotFound", "Repository not found");
                 return;
               }
               if (int denied = auth_status(hub.repos, repo, req)) {
                 hub.control.log_request(req, denied, key);
                 deny(res, denied, repo);
                 return;
               }
               auto f = hub.repos.file(repo, rel);
               if (!f) {
                 hub.control.log_request(req, 404, key);
                 not_found(res, "EntryNotFound", "Entry not found");
                 return;
               }
               serve_bytes(hub.control, req, res, key, *f, f->hashes.sha256);
             });

  // GitHub release downloads (the router's LEMONADE_RELEASES_URL points here in tests).
  server.Get(R"(/([^/]+)/([^/]+)/releases/download/([^/]+)/([^/]+))",
             [&hub](const httplib::Request& req, httplib::Response& res) {
               const std::string key =
                   repo_of(req) + "/" + req.matches[3].str() + "/" + req.matches[4].str();
               auto f = hub.repos.release_asset(key);
               if (!f) {
                 hub.control.log_request(req, 404, key);
                 reply_json(res, 404, {{"error", "Not Found"}});
                 return;
               }
               serve_bytes(hub.control, req, res, key, *f, f->hashes.sha256);
             });

  // Anything else is logged too, so a test sees a wrong URL.
  server.Get(R"(/.*)", [&hub](const httplib::Request& req, httplib::Response& res) {
    hub.control.log_request(req, 404, "");
    reply_json(res, 404, {{"error", "Not Found"}});
  });
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

}  // namespace

int run_hub(const HubOptions& options) {
  if (!is_loopback(options.host)) {
    std::fprintf(stderr, "fake-hub: --host must be a loopback address, not %s\n",
                 options.host.c_str());
    return 2;
  }
  // SIGTERM and SIGINT go to a sigwait thread; every thread started later
  // inherits the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  // Both live until the process exits (it never returns once serving).
  auto* hub = new Hub{RepoFiles(options.root), {}};
  auto* server = new httplib::Server();
  auto* base = new std::string();
  server->new_task_queue = [] { return new GrowingTaskQueue(320); };
  server->set_tcp_nodelay(true);
  server->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server->set_keep_alive_max_count(100000);
  server->set_write_timeout(30, 0);  // a reader may pause while it hashes
  add_routes(*server, *hub, *base);

  const int port = options.port == 0
                       ? server->bind_to_any_port(options.host)
                       : (server->bind_to_port(options.host, options.port) ? options.port : -1);
  if (port <= 0) {
    std::fprintf(stderr, "fake-hub: cannot bind %s:%d\n", options.host.c_str(), options.port);
    return 1;
  }
  const std::string host = options.host == "::1" ? "[::1]" : options.host;
  *base = "http://" + host + ":" + std::to_string(port);

  std::thread([signals, hub, server] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::fprintf(stderr, "fake-hub: signal %d, stopping\n", sig);
    hub->control.stop();  // releases stalled transfers and waits
    server->stop();
    // Idle keep-alive connections may hold httplib's threads for a while.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::fflush(stdout);
    std::_Exit(0);
  }).detach();

  std::printf("fake-hub listening on %s:%d\n", host.c_str(), port);
  std::fflush(stdout);
  server->listen_after_bind();
  hub->control.stop();
  std::fflush(stdout);
  std::_Exit(0);
}

}  // namespace fake
