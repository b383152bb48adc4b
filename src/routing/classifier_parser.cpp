// routing.classifiers: each entry's keys and model first (for every entry),
// then each type's own fields.
#include <algorithm>

#include "parse_support.h"

namespace lemon::routing::detail {
namespace {

constexpr int kMaxClassifierTokens = 4096;
constexpr std::int64_t kMaxClassifierTimeoutMs = 600'000;

std::optional<ClassifierType> classifier_type(const std::string& name) {
  return value_named(kClassifierTypeNames, name);
}

// Lemonade reserves these names for presets it has not built.
bool is_reserved_type(const std::string& name) {
  for (const char* reserved : {"pii_detection", "prompt_safety", "language_detection",
                               "domain_classification", "complexity", "sentiment"}) {
    if (name == reserved) {
      return true;
    }
  }
  return false;
}

void check_model_type(const Classifier& c, const std::string& type_name,
                      const std::string& original, const ParseOptions& options,
                      const std::string& path) {
  if (!options.model_type || c.type == ClassifierType::kLlm) {
    return;
  }
  const auto type = options.model_type(c.model);
  if (!type) {
    fail(path + ".model '" + original + "' has an unresolvable type; cannot validate it as a '" +
         type_name + "'");
  }
  if (c.type == ClassifierType::kClassifier && *type != ModelType::kLlm) {
    fail(path + ".model '" + original + "' has type '" + model_type_name(*type) +
         "', which cannot serve as a classifier (needs an LLM or classification model)");
  }
  if (c.type == ClassifierType::kSemanticSimilarity && *type != ModelType::kEmbedding) {
    fail(path + ".model '" + original + "' has type '" + model_type_name(*type) +
         "', which cannot serve semantic_similarity (needs an embedding model)");
  }
}

std::int64_t bounded_integer(const json& entry, const char* key, std::int64_t low,
                             std::int64_t high, std::int64_t fallback, const std::string& path) {
  auto it = entry.find(key);
  if (it == entry.end()) {
    return fallback;
  }
  if (!it->is_number_integer() || it->get<std::int64_t>() < low || it->get<std::int64_t>() > high) {
    fail(path + "." + key + " must be an integer from " + std::to_string(low) + " to " +
         std::to_string(high));
  }
  return it->get<std::int64_t>();
}

// The checks every entry gets first: keys, id, type, on_error, model.
Classifier parse_entry(const json& entry, const NameRules& names, const std::string& path,
                       std::string& type_name) {
  require_keys(entry,
               {"id", "type", "model", "prompt", "labels", "default_label", "reference_phrases",
                "on_error", "max_tokens", "timeout_ms"},
               path);
  Classifier c;
  c.id = required_string(entry, "id", path);
  type_name = required_string(entry, "type", path);
  if (entry.contains("on_error")) {
    const std::string on_error = optional_string(entry, "on_error", path);
    if (on_error != "match_true" && on_error != "match_false") {
      fail(path + ".on_error must be match_true or match_false");
    }
    c.on_error_match = on_error == "match_true";
  }
  c.max_tokens =
      static_cast<int>(bounded_integer(entry, "max_tokens", 1, kMaxClassifierTokens, 256, path));
  c.timeout = std::chrono::milliseconds(
      bounded_integer(entry, "timeout_ms", 1, kMaxClassifierTimeoutMs, 10'000, path));
  if (entry.contains("model")) {
    const std::string original = optional_string(entry, "model", path);
    c.model = names.component(original, path + ".model");
    if (auto type = classifier_type(type_name)) {
      c.type = *type;
      check_model_type(c, type_name, original, names.options, path);
    }
  }
  return c;
}

std::vector<std::string> labels_of(const json& entry, const std::string& id) {
  std::vector<std::string> labels;
  auto it = entry.find("labels");
  if (it == entry.end()) {
    return labels;
  }
  if (!it->is_array()) {
    fail("classifier '" + id + "' labels must be an array");
  }
  for (const auto& item : *it) {
    if (!item.is_string() || item.get_ref<const std::string&>().empty()) {
      fail("classifier '" + id + "' labels must be non-empty strings");
    }
    labels.push_back(item.get<std::string>());
  }
  return labels;
}

std::string default_label_of(const json& entry, const std::vector<std::string>& labels,
                             const std::string& id) {
  auto it = entry.find("default_label");
  if (it == entry.end()) {
    return {};
  }
  if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
    fail("classifier '" + id + "' default_label must be a non-empty string");
  }
  if (labels.empty()) {
    fail("classifier '" + id + "' default_label requires labels");
  }
  if (std::find(labels.begin(), labels.end(), it->get<std::string>()) == labels.end()) {
    fail("classifier '" + id + "' default_label is not declared in labels");
  }
  return it->get<std::string>();
}

void parse_reference_phrases(const json& entry, Classifier& c) {
  const std::string who = "semantic_similarity classifier '" + c.id + "'";
  auto it = entry.find("reference_phrases");
  if (it == entry.end()) {
    fail(who + " requires reference_phrases");
  }
  if (!it->is_object() || it->empty()) {
    fail(who + " reference_phrases must be a non-empty object mapping concept -> phrases");
  }
  for (const auto& item : it->items()) {
    const std::string& concept_name = item.key();
    if (concept_name.empty()) {
      fail(who + " has an empty concept name");
    }
    std::string concept_path = who;
    concept_path += " concept '" + concept_name + "'";
    const json& phrases = item.value();
    if (!phrases.is_array() || phrases.empty()) {
      fail(concept_path + " must have a non-empty array of reference phrases");
    }
    std::vector<std::string> list;
    for (const auto& phrase : phrases) {
      if (!phrase.is_string() || phrase.get_ref<const std::string&>().empty()) {
        fail(concept_path + " reference phrases must be non-empty strings");
      }
      list.push_back(phrase.get<std::string>());
    }
    c.labels.push_back(concept_name);
    c.reference_phrases.emplace_back(concept_name, std::move(list));
  }
}

// Each type's own fields, as the engine needs them.
void complete(const json& entry, const std::string& type_name, Classifier& c) {
  if (is_reserved_type(type_name)) {
    fail("classifier type not implemented yet: " + type_name);
  }
  auto type = classifier_type(type_name);
  if (!type) {
    fail("unknown classifier type: " + type_name);
  }
  c.type = *type;
  switch (c.type) {
    case ClassifierType::kClassifier:
      c.labels = labels_of(entry, c.id);
      c.default_label = default_label_of(entry, c.labels, c.id);
      if (c.model.empty()) {
        fail("classifier requires model");
      }
      break;
    case ClassifierType::kSemanticSimilarity:
      if (entry.contains("labels")) {
        fail("semantic_similarity classifier '" + c.id +
             "' does not accept labels; concept names are the reference_phrases keys");
      }
      parse_reference_phrases(entry, c);
      c.default_label = default_label_of(entry, c.labels, c.id);
      if (c.model.empty()) {
        fail("semantic_similarity classifier requires model");
      }
      break;
    case ClassifierType::kLlm:
      c.labels = labels_of(entry, c.id);
      c.default_label = default_label_of(entry, c.labels, c.id);
      if (c.model.empty()) {
        fail("llm classifier requires model");
      }
      if (auto prompt = entry.find("prompt"); prompt != entry.end() && prompt->is_string()) {
        c.prompt = prompt->get<std::string>();
      }
      if (c.prompt.empty()) {
        fail("llm classifier requires prompt");
      }
      if (c.labels.empty()) {
        fail("llm classifier requires at least one label (candidate)");
      }
      break;
  }
}

}  // namespace

void parse_classifiers(const json& routing, const NameRules& names, RoutePolicy& policy) {
  auto it = routing.find("classifiers");
  if (it == routing.end()) {
    return;
  }
  if (!it->is_array()) {
    fail("routing.classifiers must be an array");
  }
  std::vector<std::string> type_names;
  for (std::size_t i = 0; i < it->size(); ++i) {
    std::string type_name;
    policy.classifiers.push_back(
        parse_entry((*it)[i], names, at_index("routing.classifiers", i), type_name));
    type_names.push_back(std::move(type_name));
  }
  for (std::size_t i = 0; i < policy.classifiers.size(); ++i) {
    Classifier& c = policy.classifiers[i];
    complete((*it)[i], type_names[i], c);
    for (std::size_t j = 0; j < i; ++j) {
      if (policy.classifiers[j].id == c.id) {
        fail("duplicate classifier id: " + c.id);
      }
    }
  }
}

}  // namespace lemon::routing::detail
