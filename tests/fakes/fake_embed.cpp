#include "fake_embed.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "fake_reply.h"
#include "fake_request.h"
#include "fake_runtime.h"
#include "fake_util.h"

namespace fake {
namespace {

// One embedding input as text (token arrays are joined with spaces) plus its token count.
struct Input {
  std::string text;
  int tokens = 0;
};

bool is_token_array(const json& j) {
  return j.is_array() && !j.empty() &&
         std::all_of(j.begin(), j.end(), [](const json& t) { return t.is_number_integer(); });
}

Input token_input(const json& tokens) {
  Input in;
  for (const json& t : tokens) {
    in.text += std::to_string(t.get<long long>()) + " ";
  }
  in.tokens = static_cast<int>(tokens.size());
  return in;
}

// Accepts a string, an array of strings, a token array or an array of token arrays.
bool read_inputs(const json& input, std::vector<Input>* out) {
  if (input.is_string()) {
    out->push_back({input.get<std::string>(), approx_tokens(input.get<std::string>())});
    return true;
  }
  if (is_token_array(input)) {
    out->push_back(token_input(input));
    return true;
  }
  if (!input.is_array() || input.empty()) {
    return false;
  }
  for (const json& item : input) {
    if (item.is_string()) {
      out->push_back({item.get<std::string>(), approx_tokens(item.get<std::string>())});
    } else if (is_token_array(item)) {
      out->push_back(token_input(item));
    } else {
      return false;
    }
  }
  return true;
}

std::vector<float> embed(const std::string& text) {
  uint64_t state = fnv1a(text);
  std::vector<float> v(kEmbeddingDim);
  double norm = 0;
  for (float& x : v) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;  // LCG step
    x = static_cast<float>(static_cast<double>(state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    norm += static_cast<double>(x) * x;
  }
  norm = std::sqrt(norm);
  for (float& x : v) {
    x = static_cast<float>(x / norm);
  }
  return v;
}

// Little-endian float32 bytes, base64-encoded (encoding_format "base64").
std::string embed_base64(const std::vector<float>& v) {
  std::string bytes;
  for (float x : v) {
    uint32_t bits = 0;
    std::memcpy(&bits, &x, sizeof(bits));
    for (int i = 0; i < 4; ++i) {
      bytes += static_cast<char>((bits >> (8 * i)) & 0xFF);
    }
  }
  return base64_encode(bytes);
}

void reply_not_supported(httplib::Response& res, const char* what, const char* flag) {
  res.status = 501;
  res.set_content(llama_error_json(501,
                                   std::string("This server does not support ") + what +
                                       ". Start it with `" + flag + "`",
                                   "not_supported_error"),
                  "application/json");
}

void handle_embeddings(const std::string& model_id, const httplib::Request& req,
                       httplib::Response& res) {
  JobPtr job = admit(res);
  json body;
  if (!job || !parse_json_body(job, req, res, &body)) {
    return;
  }
  remember_request(body);
  std::vector<Input> inputs;
  const char* input_key = body.contains("input") ? "input" : "content";
  if (!body.contains(input_key) || !read_inputs(body[input_key], &inputs)) {
    reply_bad_request(job, res, "\"input\" must be a string or an array of strings or tokens");
    return;
  }
  std::string format = "float";
  if (body.contains("encoding_format")) {
    format = body["encoding_format"].is_string() ? body["encoding_format"].get<std::string>() : "";
    if (format != "float" && format != "base64") {
      reply_bad_request(job, res,
                        "The format to return the embeddings in. Can be either float or base64");
      return;
    }
  }
  json data = json::array();
  int total = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<float> v = embed(inputs[i].text);
    json e = {{"object", "embedding"}, {"index", i}};
    if (format == "base64") {
      e["embedding"] = embed_base64(v);
    } else {
      e["embedding"] = v;
    }
    data.push_back(std::move(e));
    total += inputs[i].tokens;
  }
  json out = {{"object", "list"},
              {"data", std::move(data)},
              {"model", model_name(body, model_id)},
              {"usage", {{"prompt_tokens", total}, {"total_tokens", total}}}};
  reply_later(job, res, request_params(runtime().knobs, body), 0, dump(out));
}

std::set<std::string> words(const std::string& text) {
  std::set<std::string> out;
  std::string w;
  std::istringstream in(text);
  while (in >> w) {
    std::string clean;
    for (char c : w) {
      if (std::isalnum(static_cast<unsigned char>(c))) {
        clean += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
    }
    if (!clean.empty()) {
      out.insert(clean);
    }
  }
  return out;
}

// Fraction of query words found in the document, in [0, 1].
double overlap_score(const std::set<std::string>& query, const std::string& doc) {
  if (query.empty()) {
    return 0.0;
  }
  std::set<std::string> d = words(doc);
  size_t hits = 0;
  for (const std::string& w : query) {
    hits += d.count(w);
  }
  return static_cast<double>(hits) / static_cast<double>(query.size());
}

void handle_rerank(const std::string& model_id, const httplib::Request& req,
                   httplib::Response& res) {
  JobPtr job = admit(res);
  json body;
  if (!job || !parse_json_body(job, req, res, &body)) {
    return;
  }
  if (!body.contains("query") || !body["query"].is_string() || !body.contains("documents") ||
      !body["documents"].is_array()) {
    reply_bad_request(job, res, "\"query\" (string) and \"documents\" (array) are required");
    return;
  }
  std::string query = body["query"].get<std::string>();
  std::set<std::string> query_words = words(query);
  std::vector<std::pair<size_t, double>> scored;
  int tokens = approx_tokens(query);
  for (size_t i = 0; i < body["documents"].size(); ++i) {
    const json& d = body["documents"][i];
    std::string doc = d.is_string() ? d.get<std::string>() : dump(d);
    scored.emplace_back(i, overlap_score(query_words, doc));
    tokens += approx_tokens(doc);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (body.contains("top_n") && body["top_n"].is_number_integer()) {
    long long n = body["top_n"].get<long long>();
    if (n >= 0 && static_cast<size_t>(n) < scored.size()) {
      scored.resize(static_cast<size_t>(n));
    }
  }
  json results = json::array();
  for (const auto& [index, score] : scored) {
    results.push_back({{"index", index}, {"relevance_score", score}});
  }
  json out = {{"model", model_name(body, model_id)},
              {"object", "list"},
              {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}},
              {"results", std::move(results)}};
  reply_later(job, res, request_params(runtime().knobs, body), 0, dump(out));
}

}  // namespace

httplib::Server::Handler embeddings_handler(const std::string& model_id, bool enabled) {
  return [model_id, enabled](const httplib::Request& req, httplib::Response& res) {
    if (!enabled) {
      reply_not_supported(res, "embeddings", "--embeddings");
      return;
    }
    handle_embeddings(model_id, req, res);
  };
}

httplib::Server::Handler rerank_handler(const std::string& model_id, bool enabled) {
  return [model_id, enabled](const httplib::Request& req, httplib::Response& res) {
    if (!enabled) {
      reply_not_supported(res, "reranking", "--reranking");
      return;
    }
    handle_rerank(model_id, req, res);
  };
}

}  // namespace fake
