#include "lemon/remote/remote_spec.h"

#include <arpa/inet.h>

#include <cmath>
#include <memory>
#include <set>

#include "lemon/download/url.h"
#include "lemon/models/registry_entry.h"

namespace lemon::remote {
namespace {

Error spec_error(const std::string& where, std::string_view what) {
  return Error(ErrorCode::kInvalidOption, where + ": " + std::string(what));
}

// Seconds as a JSON number, within [0, max_s].
Result<std::chrono::milliseconds> seconds_at(const nlohmann::json& value, const std::string& where,
                                             double max_s) {
  if (!value.is_number() || value.get<double>() < 0.0 || value.get<double>() > max_s ||
      !std::isfinite(value.get<double>())) {
    return spec_error(where, "expected a number of seconds from 0 to " +
                                 std::to_string(static_cast<long long>(max_s)));
  }
  return std::chrono::milliseconds(std::llround(value.get<double>() * 1000.0));
}

Result<std::string> string_at(const nlohmann::json& value, const std::string& where) {
  if (!value.is_string() || value.get<std::string>().empty()) {
    return spec_error(where, "expected a non-empty string");
  }
  return value.get<std::string>();
}

// `entry`'s string `key`, which it must have: "`where`: `missing`" when it
// has none.
Result<std::string> required_string(const nlohmann::json& entry, const std::string& where,
                                    const std::string& key, std::string_view missing) {
  auto it = entry.find(key);
  if (it == entry.end()) {
    return spec_error(where, missing);
  }
  return string_at(*it, where + "." + key);
}

}  // namespace

const char* remote_policy_name(RemotePolicy policy) {
  return policy == RemotePolicy::kLeastBusy ? "least_busy" : "failover";
}

std::string EndpointUrl::origin() const {
  return scheme + "://" + host + ":" + std::to_string(port);
}

bool is_loopback(std::string_view host) {
  std::string h(host);
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') {
    h = h.substr(1, h.size() - 2);
  }
  if (h == "localhost") {
    return true;
  }
  in_addr v4{};
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  return ::inet_pton(AF_INET6, h.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

Result<EndpointUrl> parse_endpoint_url(std::string_view text, const std::string& where) {
  const std::string copy(text);
  std::string why;
  auto parts = download::split_url(text, &why);
  if (!parts) {
    return spec_error(where, "'" + copy + "' cannot be read: " + why);
  }
  EndpointUrl out;
  out.scheme = parts->scheme;
  if (out.scheme != "http" && out.scheme != "https") {
    return spec_error(where, "'" + copy + "' must start with http:// or https://");
  }
  if (!parts->user.empty() || !parts->query.empty() || !parts->fragment.empty()) {
    return spec_error(where, "'" + copy +
                                 "' must have no credentials, query or fragment (name the key "
                                 "with api_key_env or api_key_file)");
  }
  out.host = parts->host;
  if (out.host.empty()) {
    return spec_error(where, "'" + copy + "' has no host");
  }
  out.port = parts->port.empty() ? (out.tls() ? 443 : 80) : std::stoi(parts->port);
  out.path = parts->path;
  while (!out.path.empty() && out.path.back() == '/') {
    out.path.pop_back();
  }
  return out;
}

Result<RemoteEndpointSpec> parse_remote_endpoint(const nlohmann::json& entry,
                                                 const std::string& where) {
  if (!entry.is_object()) {
    return spec_error(where, "expected an object {\"base_url\", ...}");
  }
  static const std::set<std::string, std::less<>> known = {
      "base_url",        "api_key_env",         "api_key_file", "connect_timeout",
      "request_timeout", "allow_insecure_http", "ca_file"};
  for (const auto& [key, value] : entry.items()) {
    if (!known.contains(key)) {
      return spec_error(std::string(where).append(".").append(key),
                        "is not an endpoint setting (base_url, api_key_env, api_key_file, "
                        "connect_timeout, request_timeout, allow_insecure_http, ca_file)");
    }
  }
  RemoteEndpointSpec out;
  auto text = required_string(entry, where, "base_url", "needs a \"base_url\"");
  if (!text.ok()) {
    return std::move(text).error();
  }
  out.base_url = *text;
  while (!out.base_url.empty() && out.base_url.back() == '/') {
    out.base_url.pop_back();
  }
  auto url = parse_endpoint_url(out.base_url, where + ".base_url");
  if (!url.ok()) {
    return std::move(url).error();
  }
  out.url = std::move(url).value();
  for (const char* key : {"api_key_env", "api_key_file", "ca_file"}) {
    if (auto it = entry.find(key); it != entry.end() && !it->is_null()) {
      auto value = string_at(*it, std::string(where).append(".").append(key));
      if (!value.ok()) {
        return std::move(value).error();
      }
      (std::string_view(key) == "api_key_env"    ? out.api_key_env
       : std::string_view(key) == "api_key_file" ? out.api_key_file
                                                 : out.ca_file) = *value;
    }
  }
  if (!out.api_key_env.empty() && !out.api_key_file.empty()) {
    return spec_error(where, "name the key with api_key_env or api_key_file, not both");
  }
  if (auto it = entry.find("allow_insecure_http"); it != entry.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return spec_error(where + ".allow_insecure_http", "expected true or false");
    }
    out.allow_insecure_http = it->get<bool>();
  }
  for (const char* key : {"connect_timeout", "request_timeout"}) {
    if (auto it = entry.find(key); it != entry.end() && !it->is_null()) {
      auto value = seconds_at(*it, std::string(where).append(".").append(key), 86400.0);
      if (!value.ok()) {
        return std::move(value).error();
      }
      (std::string_view(key) == "connect_timeout" ? out.connect_timeout : out.request_timeout) =
          *value;
    }
  }
  if (out.connect_timeout.count() == 0) {
    return spec_error(where + ".connect_timeout", "must be more than 0");
  }
  if (!out.url.tls() && !is_loopback(out.url.host) && !out.allow_insecure_http) {
    return spec_error(where + ".base_url",
                      "'" + out.base_url +
                          "' is plain HTTP to another machine: use https://, or set "
                          "\"allow_insecure_http\": true to send prompts and the key unencrypted");
  }
  if (!out.ca_file.empty() && !out.url.tls()) {
    return spec_error(where + ".ca_file", "applies to https:// endpoints only");
  }
  return out;
}

Result<RemoteModelSpec> parse_remote_model(std::string name, std::string checkpoint,
                                           const nlohmann::json& entry, const std::string& where) {
  RemoteModelSpec out;
  out.name = std::move(name);
  out.checkpoint = std::move(checkpoint);
  if (out.checkpoint.empty()) {
    return spec_error(where + ".checkpoint", "names the model on the remote and is required");
  }
  if (!entry.is_object()) {
    return spec_error(where, "expected an object");
  }
  if (auto it = entry.find("policy"); it != entry.end() && !it->is_null()) {
    if (*it == "failover") {
      out.policy = RemotePolicy::kFailover;
    } else if (*it == "least_busy") {
      out.policy = RemotePolicy::kLeastBusy;
    } else {
      return spec_error(where + ".policy", "expected \"failover\" or \"least_busy\"");
    }
  }
  auto endpoints = entry.find("endpoints");
  if (endpoints == entry.end() || !endpoints->is_array() || endpoints->empty()) {
    return spec_error(where + ".endpoints", "expected a non-empty list of {\"base_url\", ...}");
  }
  for (std::size_t i = 0; i < endpoints->size(); ++i) {
    auto one =
        parse_remote_endpoint((*endpoints)[i], where + ".endpoints[" + std::to_string(i) + "]");
    if (!one.ok()) {
      return std::move(one).error();
    }
    out.endpoints.push_back(std::move(one).value());
  }
  return out;
}

Result<RemoteSettings> parse_remote_settings(const nlohmann::json& remote,
                                             const nlohmann::json& discovery) {
  RemoteSettings out;
  if (!remote.is_null()) {
    if (!remote.is_object()) {
      return spec_error("remote", "expected an object {\"models\": {...}, \"health_interval\": s}");
    }
    for (const auto& [key, value] : remote.items()) {
      if (key == "models") {
        if (!value.is_object()) {
          return spec_error("remote.models", "expected an object {name: entry}");
        }
        for (const auto& [model, entry] : value.items()) {
          const std::string where = "remote.models." + model;
          if (!entry.is_object()) {
            return spec_error(where, "expected an object");
          }
          if (entry.contains("recipe") && entry["recipe"] != "remote") {
            return spec_error(where + ".recipe", "must be \"remote\" here (or left out)");
          }
          const auto checkpoint = entry.find("checkpoint");
          auto spec = parse_remote_model("user." + model,
                                         checkpoint != entry.end() && checkpoint->is_string()
                                             ? checkpoint->get<std::string>()
                                             : std::string(),
                                         entry, where);
          if (!spec.ok()) {
            return std::move(spec).error();
          }
          // The catalogue's keys (labels, size, ...) are checked as
          // user_models.json's are.
          nlohmann::ordered_json as_entry = nlohmann::ordered_json::parse(entry.dump());
          as_entry["recipe"] = "remote";
          if (auto registered = parse_registry_entry("user." + model, as_entry, ModelSource::kUser);
              !registered.ok()) {
            return spec_error(where, registered.error().message());
          }
          nlohmann::json shown = entry;
          shown["recipe"] = "remote";
          shown["name"] = "user." + model;
          out.model_entries.push_back(std::move(shown));
          out.models.push_back(std::move(spec).value());
        }
      } else if (key == "health_interval" || key == "discovery_interval" || key == "retry_after") {
        auto value_ms = seconds_at(value, "remote." + key, 3600.0);
        if (!value_ms.ok()) {
          return std::move(value_ms).error();
        }
        if (value_ms->count() < 50) {
          return spec_error("remote." + key, "must be at least 0.05 s");
        }
        (key == "health_interval"      ? out.health_interval
         : key == "discovery_interval" ? out.discovery_interval
                                       : out.retry_after) = *value_ms;
      } else {
        return spec_error("remote." + key,
                          "is not a remote setting (models, health_interval, discovery_interval, "
                          "retry_after)");
      }
    }
  }
  if (!discovery.is_null()) {
    if (!discovery.is_array()) {
      return spec_error("remote_discovery", "expected a list of {base_url, key_env, prefix}");
    }
    for (std::size_t i = 0; i < discovery.size(); ++i) {
      const std::string where = "remote_discovery[" + std::to_string(i) + "]";
      nlohmann::json entry = discovery[i];
      if (!entry.is_object()) {
        return spec_error(where, "expected an object {base_url, key_env, prefix}");
      }
      DiscoverySpec one;
      auto text = required_string(entry, where, "prefix",
                                  "needs a \"prefix\" (models are listed as <prefix>/<name>)");
      if (!text.ok()) {
        return std::move(text).error();
      }
      one.prefix = *text;
      if (one.prefix.find('/') != std::string::npos) {
        return spec_error(where + ".prefix", "must not contain '/' (models are <prefix>/<name>)");
      }
      for (const auto& earlier : out.discovery) {
        if (earlier.prefix == one.prefix) {
          return spec_error(where + ".prefix", "'" + one.prefix + "' is already used");
        }
      }
      entry.erase("prefix");
      if (auto key_env = entry.find("key_env"); key_env != entry.end()) {
        entry["api_key_env"] = *key_env;  // the name for it
        entry.erase("key_env");
      }
      auto endpoint = parse_remote_endpoint(entry, where);
      if (!endpoint.ok()) {
        return std::move(endpoint).error();
      }
      one.endpoint = std::move(endpoint).value();
      out.discovery.push_back(std::move(one));
    }
  }
  return out;
}

}  // namespace lemon::remote
