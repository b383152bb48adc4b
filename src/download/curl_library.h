// libcurl's entry points, loaded on first use (lazy_library.h) and
// initialised once (curl_global_init). Only the download layer calls libcurl
// through it; the router's binary does not link libcurl.
//
// Thread-safety: curl_library() may be called from any thread; the first
// call loads the library.
#pragma once

#include <curl/curl.h>

#include <string>

namespace lemon::download {

struct CurlLibrary {
  bool loaded = false;
  std::string error;  // why it is not loaded
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_setopt) easy_setopt = nullptr;
  decltype(&::curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&::curl_easy_perform) easy_perform = nullptr;
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
  decltype(&::curl_easy_escape) easy_escape = nullptr;
  decltype(&::curl_free) free = nullptr;
  decltype(&::curl_slist_append) slist_append = nullptr;
  decltype(&::curl_slist_free_all) slist_free_all = nullptr;
  decltype(&::curl_url) url = nullptr;
  decltype(&::curl_url_set) url_set = nullptr;
  decltype(&::curl_url_get) url_get = nullptr;
  decltype(&::curl_url_cleanup) url_cleanup = nullptr;
  // The multi interface (curl_upstream.cpp drives one transfer with it, so
  // that its own poll() also watches the downstream client's socket).
  decltype(&::curl_multi_init) multi_init = nullptr;
  decltype(&::curl_multi_add_handle) multi_add_handle = nullptr;
  decltype(&::curl_multi_remove_handle) multi_remove_handle = nullptr;
  decltype(&::curl_multi_setopt) multi_setopt = nullptr;
  decltype(&::curl_multi_socket_action) multi_socket_action = nullptr;
  decltype(&::curl_multi_info_read) multi_info_read = nullptr;
  decltype(&::curl_multi_cleanup) multi_cleanup = nullptr;
  decltype(&::curl_multi_strerror) multi_strerror = nullptr;
  // A share: the connection cache and TLS sessions that one
  // CurlUpstreamClient's calls keep between them.
  decltype(&::curl_share_init) share_init = nullptr;
  decltype(&::curl_share_setopt) share_setopt = nullptr;
  decltype(&::curl_share_cleanup) share_cleanup = nullptr;
};

// libcurl, loaded and initialised; `loaded` is false (and `error` says why)
// when it cannot be, and every download then fails with that error.
const CurlLibrary& curl_library();

}  // namespace lemon::download
