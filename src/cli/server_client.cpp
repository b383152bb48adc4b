#include "lemon/cli/server_client.h"

#include <curl/curl.h>

#include <memory>
#include <mutex>

namespace lemon::cli {
namespace {

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string connect_host(const std::string& host) {
  if (host.empty() || host == "0.0.0.0" || host == "localhost") {
    return "127.0.0.1";
  }
  if (host == "::" || host == "[::]") {
    return "[::1]";
  }
  if (host.find(':') != std::string::npos && host.front() != '[') {
    return "[" + host + "]";
  }
  return host;
}

struct Transfer {
  std::string body;
  const char* method = nullptr;  // a custom method (DELETE); null: GET or POST
  bool keep_body = true;
  const std::function<bool(std::string_view)>* on_data = nullptr;
  const std::function<bool()>* stop = nullptr;
  bool aborted = false;
  CURL* curl = nullptr;
};

size_t on_write(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view piece(data, size * n);
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  bool success = status >= 200 && status < 300;
  if (t->on_data != nullptr && success) {
    if (!(*t->on_data)(piece) || (t->stop != nullptr && *t->stop && (*t->stop)())) {
      t->aborted = true;
      return 0;  // makes libcurl stop with CURLE_WRITE_ERROR
    }
    return piece.size();
  }
  if (t->keep_body || !success) {
    t->body.append(piece);
  }
  return piece.size();
}

}  // namespace

std::string path_segment(std::string_view text) {
  global_init();
  char* escaped = curl_easy_escape(nullptr, text.data(), static_cast<int>(text.size()));
  if (escaped == nullptr) {
    return std::string(text);
  }
  std::string out(escaped);
  curl_free(escaped);
  return out;
}

namespace {

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->stop != nullptr && *t->stop && (*t->stop)()) {
    t->aborted = true;
    return 1;
  }
  return 0;
}

HttpResult perform(const std::string& url, const std::string& api_key, const std::string* post_body,
                   std::chrono::milliseconds timeout, Transfer& t) {
  global_init();
  HttpResult result;
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) {
    result.transport_error = "cannot initialise libcurl";
    return result;
  }
  t.curl = curl.get();
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  auto add_header = [&headers](const std::string& h) {
    headers.reset(curl_slist_append(headers.release(), h.c_str()));
  };
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROXY, "");  // the router is local: never via a proxy
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  if (timeout.count() > 0) {
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  }
  if (post_body != nullptr) {
    add_header("Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, post_body->c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post_body->size()));
  }
  if (t.method != nullptr) {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, t.method);
  }
  if (!api_key.empty()) {
    add_header("Authorization: Bearer " + api_key);
  }
  add_header("Expect:");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  if (t.stop != nullptr) {
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  }
  CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &result.status);
  result.aborted = t.aborted;
  result.body = std::move(t.body);
  if (rc != CURLE_OK && !t.aborted) {
    result.transport_error =
        result.status != 0 ? std::string("the connection closed before the response ended (") +
                                 curl_easy_strerror(rc) + ")"
                           : std::string(curl_easy_strerror(rc));
  }
  return result;
}

}  // namespace

std::string HttpResult::error_text() const {
  if (status == 0) {
    return transport_error.empty() ? std::string("no response from the server") : transport_error;
  }
  auto j = json();
  if (j.is_object() && j.contains("error")) {
    const auto& e = j["error"];
    if (e.is_string()) {
      return e.get<std::string>();
    }
    if (e.is_object() && e.contains("message") && e["message"].is_string()) {
      return e["message"].get<std::string>();
    }
  }
  if (!transport_error.empty()) {
    return transport_error;
  }
  return "the server answered HTTP " + std::to_string(status);
}

nlohmann::json HttpResult::json() const {
  return nlohmann::json::parse(body, nullptr, false);
}

ServerClient::ServerClient(std::string host, int port, std::string api_key, bool https)
    : host_(std::move(host)),
      port_(port),
      api_key_(std::move(api_key)),
      base_url_((https ? "https://" : "http://") + connect_host(host_) + ":" +
                std::to_string(port_)) {}

HttpResult ServerClient::get(std::string_view path, std::chrono::milliseconds timeout) const {
  Transfer t;
  return perform(base_url_ + std::string(path), api_key_, nullptr, timeout, t);
}

HttpResult ServerClient::del(std::string_view path, std::chrono::milliseconds timeout) const {
  Transfer t;
  t.method = "DELETE";
  return perform(base_url_ + std::string(path), api_key_, nullptr, timeout, t);
}

HttpResult ServerClient::post(std::string_view path, const nlohmann::json& body,
                              std::chrono::milliseconds timeout) const {
  Transfer t;
  std::string text = body.dump();
  return perform(base_url_ + std::string(path), api_key_, &text, timeout, t);
}

HttpResult ServerClient::stream(std::string_view path, const nlohmann::json& body,
                                const std::function<bool(std::string_view)>& on_data,
                                const std::function<bool()>& stop) const {
  Transfer t;
  t.keep_body = false;
  t.on_data = &on_data;
  t.stop = &stop;
  std::string text = body.dump();
  return perform(base_url_ + std::string(path), api_key_, &text, std::chrono::milliseconds(0), t);
}

}  // namespace lemon::cli
