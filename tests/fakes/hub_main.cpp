// fake-hub: a loopback imitation of the Hugging Face hub for the model-store
// tests and the download benchmark (README.md in this directory). Repos are
// folders DIR/<org>/<name>/; it serves the /api/models listing (siblings,
// blobId, lfs), /resolve with the CDN redirect hop, byte ranges, gated repos,
// and fault knobs set at run time through /_fake/*.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <openssl/evp.h>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string hex(const unsigned char* d, unsigned n) {
  static constexpr char k[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    out += k[d[i] >> 4];
    out += k[d[i] & 0xf];
  }
  return out;
}

struct FileInfo {
  std::string rel;
  fs::path path;
  std::uint64_t size = 0;
  std::string sha256;
  std::string blob_id;  // git blob sha1
  bool lfs = false;
};

bool is_lfs(const std::string& rel, std::uint64_t size) {
  for (const char* ext : {".gguf", ".bin", ".safetensors", ".onnx", ".pt", ".data"}) {
    std::string e(ext);
    if (rel.size() >= e.size() && rel.compare(rel.size() - e.size(), e.size(), e) == 0) {
      return true;
    }
  }
  return size > (10u << 20);
}

// Hashes (sha256, git blob sha1) of one file, streamed.
std::pair<std::string, std::string> hash_file(const fs::path& p, std::uint64_t size) {
  EVP_MD_CTX* a = EVP_MD_CTX_new();
  EVP_MD_CTX* b = EVP_MD_CTX_new();
  EVP_DigestInit_ex(a, EVP_sha256(), nullptr);
  EVP_DigestInit_ex(b, EVP_sha1(), nullptr);
  std::string header = "blob " + std::to_string(size);
  EVP_DigestUpdate(b, header.data(), header.size() + 1);
  std::ifstream in(p, std::ios::binary);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    auto n = static_cast<std::size_t>(in.gcount());
    EVP_DigestUpdate(a, buf.data(), n);
    EVP_DigestUpdate(b, buf.data(), n);
  }
  unsigned char da[EVP_MAX_MD_SIZE];
  unsigned char db[EVP_MAX_MD_SIZE];
  unsigned la = 0;
  unsigned lb = 0;
  EVP_DigestFinal_ex(a, da, &la);
  EVP_DigestFinal_ex(b, db, &lb);
  EVP_MD_CTX_free(a);
  EVP_MD_CTX_free(b);
  return {hex(da, la), hex(db, lb)};
}

std::string sha1_hex(const std::string& s) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_Digest(s.data(), s.size(), d, &n, EVP_sha1(), nullptr);
  return hex(d, n);
}

struct Rule {
  std::string path;  // "org/name/file", "org/name", or "*"
  int status = 0;
  std::optional<std::uint64_t> drop_after;
  bool corrupt = false;
  std::uint64_t bytes_per_sec = 0;
  std::optional<std::uint64_t> stall_after;
  int times = -1;  // -1: unlimited
  int api_status = 0;
  std::optional<std::uint64_t> declared_size;
  std::vector<std::string> extra_siblings;
};

class Hub {
 public:
  explicit Hub(fs::path root) : root_(std::move(root)) {}

  // ---- repositories ----------------------------------------------------------------------

  bool repo_exists(const std::string& repo) const {
    std::error_code ec;
    return fs::is_directory(root_ / repo, ec);
  }

  std::string token_of(const std::string& repo) const {
    std::ifstream in(root_ / repo / ".fake.json");
    if (!in) {
      return {};
    }
    json j = json::parse(in, nullptr, false);
    return j.is_object() && j.contains("token") ? j["token"].get<std::string>() : std::string();
  }

  std::vector<FileInfo> files(const std::string& repo) {
    std::vector<FileInfo> out;
    std::error_code ec;
    fs::path dir = root_ / repo;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (!it->is_regular_file()) {
        continue;
      }
      std::string rel = it->path().lexically_relative(dir).generic_string();
      if (rel.rfind('/') == std::string::npos && rel.starts_with(".")) {
        continue;
      }
      out.push_back(info(it->path(), rel));
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.rel < b.rel; });
    return out;
  }

  std::string commit(const std::vector<FileInfo>& files) const {
    std::string text;
    for (const auto& f : files) {
      text += f.rel + '\0' + f.sha256 + '\n';
    }
    return sha1_hex(text);
  }

  // A GitHub-style release asset: DIR/_releases/<owner>/<repo>/<tag>/<asset>.
  std::optional<FileInfo> release_asset(const std::string& rel) {
    std::error_code ec;
    fs::path p = root_ / "_releases" / rel;
    if (rel.find("..") != std::string::npos || !fs::is_regular_file(p, ec)) {
      return std::nullopt;
    }
    return info(p, rel);
  }

  std::optional<FileInfo> file(const std::string& repo, const std::string& rel) {
    for (auto& f : files(repo)) {
      if (f.rel == rel) {
        return f;
      }
    }
    return std::nullopt;
  }

  // ---- knobs -----------------------------------------------------------------------------

  void set_rules(const json& rules) {
    std::lock_guard lock(mu_);
    rules_.clear();
    for (const auto& r : rules) {
      Rule rule;
      rule.path = r.value("path", "*");
      rule.status = r.value("status", 0);
      if (r.contains("drop_after_bytes"))
        rule.drop_after = r["drop_after_bytes"].get<std::uint64_t>();
      rule.corrupt = r.value("corrupt", false);
      rule.bytes_per_sec = r.value("bytes_per_sec", std::uint64_t{0});
      if (r.contains("stall_after_bytes"))
        rule.stall_after = r["stall_after_bytes"].get<std::uint64_t>();
      rule.times = r.value("times", -1);
      rule.api_status = r.value("api_status", 0);
      if (r.contains("declared_size"))
        rule.declared_size = r["declared_size"].get<std::uint64_t>();
      if (r.contains("extra_siblings")) {
        rule.extra_siblings = r["extra_siblings"].get<std::vector<std::string>>();
      }
      rules_.push_back(rule);
    }
    ++knob_generation_;
    cv_.notify_all();
  }

  // The rule for a file request (consuming one of its `times`), if any.
  std::optional<Rule> take_file_rule(const std::string& path) {
    std::lock_guard lock(mu_);
    for (auto& r : rules_) {
      if ((r.path == path || r.path == "*") && r.times != 0 && r.api_status == 0 &&
          r.extra_siblings.empty() && !r.declared_size) {
        if (r.times > 0) {
          --r.times;
        }
        return r;
      }
    }
    return std::nullopt;
  }

  std::optional<Rule> repo_rule(const std::string& repo) {
    std::lock_guard lock(mu_);
    for (const auto& r : rules_) {
      if (r.path == repo) {
        return r;
      }
    }
    return std::nullopt;
  }

  std::uint64_t knob_generation() {
    std::lock_guard lock(mu_);
    return knob_generation_;
  }

  // ---- the request log and the wait endpoint ---------------------------------------------

  std::size_t log_request(const httplib::Request& req, int status, const std::string& what) {
    std::lock_guard lock(mu_);
    std::string query;
    for (const auto& [k, v] : req.params) {
      query += (query.empty() ? "" : "&") + k + "=" + v;
    }
    log_.push_back({{"method", req.method},
                    {"path", req.path},
                    {"query", query},
                    {"range", req.get_header_value("Range")},
                    {"authorization_present", req.has_header("Authorization")},
                    {"bytes_sent", 0},
                    {"status", status}});
    ++request_counts_[what];
    cv_.notify_all();
    return log_.size() - 1 + log_base_;
  }

  void add_sent(std::size_t id, std::uint64_t n) {
    std::lock_guard lock(mu_);
    if (id >= log_base_ && id - log_base_ < log_.size()) {
      auto& entry = log_[id - log_base_]["bytes_sent"];
      entry = entry.get<std::uint64_t>() + n;
    }
  }

  json log() {
    std::lock_guard lock(mu_);
    return log_;
  }

  void clear_log() {
    std::lock_guard lock(mu_);
    log_base_ += log_.size();
    log_ = json::array();
  }

  void set_stalled(const std::string& path, bool on) {
    std::lock_guard lock(mu_);
    stalled_[path] = on;
    cv_.notify_all();
  }

  bool wait(const std::string& event, const std::string& path, int count,
            std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      if (event == "stalled") {
        auto it = stalled_.find(path);
        return it != stalled_.end() && it->second;
      }
      return request_counts_[path] >= count;
    });
  }

  // Sleeps until the knobs change or `d` passes.
  void wait_knobs(std::uint64_t generation, std::chrono::milliseconds d) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, d, [&] { return knob_generation_ != generation || stopping_; });
  }

  void stop() {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  bool stopping() {
    std::lock_guard lock(mu_);
    return stopping_;
  }

 private:
  FileInfo info(const fs::path& p, const std::string& rel) {
    std::error_code ec;
    FileInfo f;
    f.rel = rel;
    f.path = p;
    f.size = fs::file_size(p, ec);
    auto mtime = fs::last_write_time(p, ec).time_since_epoch().count();
    std::string key = p.string() + "|" + std::to_string(f.size) + "|" + std::to_string(mtime);
    {
      std::lock_guard lock(mu_);
      if (auto it = hashes_.find(key); it != hashes_.end()) {
        f.sha256 = it->second.first;
        f.blob_id = it->second.second;
      }
    }
    if (f.sha256.empty()) {
      auto h = hash_file(p, f.size);
      f.sha256 = h.first;
      f.blob_id = h.second;
      std::lock_guard lock(mu_);
      hashes_[key] = h;
    }
    f.lfs = is_lfs(rel, f.size);
    return f;
  }

  fs::path root_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::pair<std::string, std::string>> hashes_;
  std::vector<Rule> rules_;
  std::uint64_t knob_generation_ = 0;
  json log_ = json::array();
  std::size_t log_base_ = 0;
  std::map<std::string, int> request_counts_;
  std::map<std::string, bool> stalled_;
  bool stopping_ = false;
};

void send_json(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(j.dump(), "application/json");
}

// 401/403 for a gated repo without the right token; 0 when allowed.
int auth_status(Hub& hub, const std::string& repo, const httplib::Request& req) {
  std::string token = hub.token_of(repo);
  if (token.empty()) {
    return 0;
  }
  std::string auth = req.get_header_value("Authorization");
  if (auth.empty()) {
    return 401;
  }
  return auth == "Bearer " + token ? 0 : 403;
}

void deny(httplib::Response& res, int status, const std::string& repo) {
  send_json(res, status,
            {{"error", "Access to model " + repo +
                           " is restricted. You must have access to it "
                           "and be authenticated to access it."}});
  res.set_header("X-Error-Code", status == 401 ? "GatedRepo" : "GatedRepoForbidden");
}

// Parses "bytes=N-" or "bytes=N-M" against `size`. nullopt: no Range header.
// {1, 0}-style invalid ranges come back as first > last.
std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_range(const std::string& h,
                                                                   std::uint64_t size) {
  if (h.rfind("bytes=", 0) != 0) {
    return std::nullopt;
  }
  std::string spec = h.substr(6);
  auto dash = spec.find('-');
  if (dash == std::string::npos || dash == 0) {
    return std::make_pair(std::uint64_t{1}, std::uint64_t{0});
  }
  std::uint64_t first = std::stoull(spec.substr(0, dash));
  std::uint64_t last = dash + 1 < spec.size() ? std::stoull(spec.substr(dash + 1)) : size - 1;
  if (size == 0 || first >= size) {
    return std::make_pair(std::uint64_t{1}, std::uint64_t{0});
  }
  return std::make_pair(first, std::min(last, size - 1));
}

void serve_bytes(Hub& hub, const httplib::Request& req, httplib::Response& res,
                 const std::string& repo, const FileInfo& f, const std::string& etag) {
  const std::string key = repo + "/" + f.rel;
  auto rule = hub.take_file_rule(key);
  if (rule && rule->status != 0) {
    std::size_t id = hub.log_request(req, rule->status, key);
    (void)id;
    send_json(res, rule->status, {{"error", "fake-hub knob status"}});
    return;
  }
  std::uint64_t first = 0;
  std::uint64_t last = f.size == 0 ? 0 : f.size - 1;
  int status = 200;
  if (req.has_header("Range")) {
    auto range = parse_range(req.get_header_value("Range"), f.size);
    if (range && range->first > range->second) {
      hub.log_request(req, 416, key);
      res.status = 416;
      res.set_header("Content-Range", "bytes */" + std::to_string(f.size));
      return;
    }
    if (range) {
      first = range->first;
      last = range->second;
      status = 206;
      res.set_header("Content-Range", "bytes " + std::to_string(first) + "-" +
                                          std::to_string(last) + "/" + std::to_string(f.size));
    }
  }
  std::size_t id = hub.log_request(req, status, key);
  res.status = status;
  res.set_header("Accept-Ranges", "bytes");
  res.set_header("ETag", "\"" + etag + "\"");
  const std::uint64_t length = f.size == 0 ? 0 : last - first + 1;
  if (length == 0) {
    res.set_content("", "application/octet-stream");
    return;
  }
  auto fd = std::make_shared<int>(::open(f.path.c_str(), O_RDONLY | O_CLOEXEC));
  Rule r = rule.value_or(Rule{});
  const std::uint64_t corrupt_at = f.size / 2;
  auto start = Clock::now();
  auto stalled_once = std::make_shared<bool>(false);
  res.set_chunked_content_provider(
      "application/octet-stream",
      [&hub, fd, r, first, length, corrupt_at, start, id, key, stalled_once](
          std::size_t offset, httplib::DataSink& sink) {
        if (offset >= length) {
          sink.done();
          return true;
        }
        std::uint64_t limit = length;
        if (r.drop_after && offset >= *r.drop_after) {
          return false;  // drop the connection
        }
        if (r.drop_after) {
          limit = std::min<std::uint64_t>(limit, *r.drop_after);
        }
        if (r.stall_after && !*stalled_once && offset >= *r.stall_after) {
          *stalled_once = true;
          // Stall until the knobs change, the client leaves or we stop.
          auto generation = hub.knob_generation();
          hub.set_stalled(key, true);
          while (hub.knob_generation() == generation && !hub.stopping() && sink.is_writable()) {
            hub.wait_knobs(generation, std::chrono::milliseconds(10));
          }
          hub.set_stalled(key, false);
          if (hub.knob_generation() == generation) {
            return false;
          }
        } else if (r.stall_after && !*stalled_once) {
          limit = std::min<std::uint64_t>(limit, *r.stall_after);
        }
        if (r.bytes_per_sec > 0) {
          auto due = start + std::chrono::microseconds(offset * 1000000 / r.bytes_per_sec);
          std::this_thread::sleep_until(due);
        }
        std::size_t want =
            static_cast<std::size_t>(std::min<std::uint64_t>(limit - offset, 256 * 1024));
        if (r.bytes_per_sec > 0) {
          want = std::min<std::size_t>(want, std::max<std::uint64_t>(1, r.bytes_per_sec / 20));
        }
        if (want == 0) {
          want = static_cast<std::size_t>(std::min<std::uint64_t>(length - offset, 256 * 1024));
        }
        std::vector<char> buf(want);
        ssize_t n = ::pread(*fd, buf.data(), want, static_cast<off_t>(first + offset));
        if (n <= 0) {
          return false;
        }
        std::uint64_t abs = first + offset;
        if (r.corrupt && corrupt_at >= abs && corrupt_at < abs + static_cast<std::uint64_t>(n)) {
          buf[corrupt_at - abs] = static_cast<char>(buf[corrupt_at - abs] ^ 0x5a);
        }
        if (!sink.write(buf.data(), static_cast<std::size_t>(n))) {
          return false;
        }
        hub.add_sent(id, static_cast<std::uint64_t>(n));
        return true;
      },
      [fd](bool) { ::close(*fd); });
}

}  // namespace

int main(int argc, char** argv) {
  std::string root;
  std::string host = "127.0.0.1";
  int port = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--root") {
      root = argv[i + 1];
    } else if (a == "--host") {
      host = argv[i + 1];
    } else if (a == "--port") {
      port = std::stoi(argv[i + 1]);
    } else {
      std::cerr << "fake-hub: unknown argument " << a << "\n";
      return 2;
    }
  }
  if (root.empty()) {
    std::cerr << "usage: fake-hub --root DIR [--host 127.0.0.1] [--port 0]\n";
    return 2;
  }
  Hub hub(root);
  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(64); };
  std::string base;

  server.Post("/_fake/knobs", [&](const httplib::Request& req, httplib::Response& res) {
    json body = json::parse(req.body, nullptr, false);
    json rules = body.is_object() ? body.value("rules", json::array()) : body;
    if (!rules.is_array()) {
      send_json(res, 400, {{"error", "rules must be an array"}});
      return;
    }
    hub.set_rules(rules);
    send_json(res, 200, {{"ok", true}});
  });
  server.Get("/_fake/log", [&](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, hub.log());
  });
  server.Post("/_fake/log/clear", [&](const httplib::Request&, httplib::Response& res) {
    hub.clear_log();
    send_json(res, 200, {{"ok", true}});
  });
  server.Get("/_fake/wait", [&](const httplib::Request& req, httplib::Response& res) {
    int timeout =
        req.has_param("timeout_ms") ? std::stoi(req.get_param_value("timeout_ms")) : 30000;
    int count = req.has_param("count") ? std::stoi(req.get_param_value("count")) : 1;
    bool ok = hub.wait(req.get_param_value("event"), req.get_param_value("path"), count,
                       std::chrono::milliseconds(timeout));
    send_json(res, ok ? 200 : 408, {{"ok", ok}});
  });

  server.Get(R"(/_cdn/([^/]+)/([^/]+)/([0-9a-f]{40})/(.+))",
             [&](const httplib::Request& req, httplib::Response& res) {
               std::string repo = req.matches[1].str() + "/" + req.matches[2].str();
               std::string rel = req.matches[4];
               if (int denied = auth_status(hub, repo, req)) {
                 hub.log_request(req, denied, repo + "/" + rel);
                 deny(res, denied, repo);
                 return;
               }
               auto f = hub.file(repo, rel);
               if (!f) {
                 hub.log_request(req, 404, repo + "/" + rel);
                 send_json(res, 404, {{"error", "Entry not found"}});
                 return;
               }
               serve_bytes(hub, req, res, repo, *f, f->sha256);
             });

  // GitHub release downloads (LEMONADE_RELEASES_URL points here in tests).
  server.Get(R"(/([^/]+)/([^/]+)/releases/download/([^/]+)/([^/]+))",
             [&](const httplib::Request& req, httplib::Response& res) {
               std::string rel = req.matches[1].str() + "/" + req.matches[2].str() + "/" +
                                 req.matches[3].str() + "/" + req.matches[4].str();
               auto f = hub.release_asset(rel);
               if (!f) {
                 hub.log_request(req, 404, rel);
                 send_json(res, 404, {{"error", "Not Found"}});
                 return;
               }
               std::string repo = req.matches[1].str() + "/" + req.matches[2].str();
               FileInfo asset = *f;
               asset.rel = req.matches[3].str() + "/" + req.matches[4].str();
               serve_bytes(hub, req, res, repo, asset, f->sha256);
             });

  auto listing = [&](const httplib::Request& req, httplib::Response& res) {
    std::string repo = req.matches[1].str() + "/" + req.matches[2].str();
    std::string rev = req.matches.size() > 3 ? req.matches[3].str() : std::string();
    auto rule = hub.repo_rule(repo);
    int status = rule && rule->api_status != 0 ? rule->api_status : 0;
    if (status == 0 && !hub.repo_exists(repo)) {
      status = 404;
    }
    if (status == 0) {
      status = auth_status(hub, repo, req);
    }
    hub.log_request(req, status == 0 ? 200 : status, repo);
    if (status == 401 || status == 403) {
      deny(res, status, repo);
      return;
    }
    if (status != 0) {
      send_json(res, status, {{"error", "Repository not found"}});
      res.set_header("X-Error-Code", "RepoNotFound");
      return;
    }
    auto files = hub.files(repo);
    std::string commit = hub.commit(files);
    if (!rev.empty() && rev != "main" && rev != commit) {
      send_json(res, 404, {{"error", "Revision not found"}});
      res.set_header("X-Error-Code", "RevisionNotFound");
      return;
    }
    bool blobs = req.get_param_value("blobs") == "true";
    json siblings = json::array();
    for (const auto& f : files) {
      json s = {{"rfilename", f.rel}};
      if (blobs) {
        std::uint64_t size = rule && rule->declared_size ? *rule->declared_size : f.size;
        s["blobId"] = f.blob_id;
        s["size"] = size;
        if (f.lfs) {
          s["lfs"] = {{"sha256", f.sha256}, {"size", size}, {"pointerSize", 134}};
        }
      }
      siblings.push_back(s);
    }
    if (rule) {
      for (const auto& extra : rule->extra_siblings) {
        json s = {{"rfilename", extra}};
        if (blobs) {
          s["blobId"] = sha1_hex(extra);
          s["size"] = 1;
        }
        siblings.push_back(s);
      }
    }
    std::string token = hub.token_of(repo);
    send_json(res, 200,
              {{"_id", commit.substr(0, 24)},
               {"id", repo},
               {"modelId", repo},
               {"sha", commit},
               {"private", false},
               {"gated", token.empty() ? json(false) : json("auto")},
               {"siblings", siblings}});
  };
  server.Get(R"(/api/models/([^/]+)/([^/]+)/revision/([^/]+))", listing);
  server.Get(R"(/api/models/([^/]+)/([^/]+))", listing);

  server.Get(R"(/([^/]+)/([^/]+)/resolve/([^/]+)/(.+))",
             [&](const httplib::Request& req, httplib::Response& res) {
               std::string repo = req.matches[1].str() + "/" + req.matches[2].str();
               std::string rev = req.matches[3];
               std::string rel = req.matches[4];
               const std::string key = repo + "/" + rel;
               if (int denied = auth_status(hub, repo, req)) {
                 hub.log_request(req, denied, key);
                 deny(res, denied, repo);
                 return;
               }
               auto files = hub.files(repo);
               std::string commit = hub.commit(files);
               std::optional<FileInfo> f;
               for (auto& x : files) {
                 if (x.rel == rel) {
                   f = x;
                 }
               }
               if (!f || (rev != "main" && rev != commit)) {
                 hub.log_request(req, 404, key);
                 send_json(res, 404, {{"error", "Entry not found"}});
                 res.set_header("X-Error-Code", "EntryNotFound");
                 return;
               }
               res.set_header("X-Repo-Commit", commit);
               if (f->lfs) {
                 hub.log_request(req, 302, key);
                 res.status = 302;
                 res.set_header("Location", base + "/_cdn/" + repo + "/" + commit + "/" + rel);
                 res.set_header("X-Linked-Etag", "\"" + f->sha256 + "\"");
                 res.set_header("X-Linked-Size", std::to_string(f->size));
                 return;
               }
               serve_bytes(hub, req, res, repo, *f, f->blob_id);
             });

  int bound =
      port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    std::cerr << "fake-hub: cannot bind " << host << ":" << port << "\n";
    return 1;
  }
  base = "http://" + host + ":" + std::to_string(bound);
  std::cout << "fake-hub listening on " << host << ":" << bound << std::endl;
  server.listen_after_bind();
  hub.stop();
  return 0;
}
