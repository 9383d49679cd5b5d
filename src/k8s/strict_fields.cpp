// docs/requests.md rule 24: unknown fields are errors, as with `kubectl apply --validate=strict`.
#include "fracpack/k8s/strict_fields.hpp"

#include <fmt/format.h>

#include "fracpack/core/quoting.hpp"

namespace fracpack::k8s {
namespace {

/// metav1.TypeMeta and metav1.ObjectMeta (k8s.io/apimachinery/pkg/apis/meta/v1/types.go).
constexpr std::string_view kObjectFields[] = {
    "apiVersion", "kind", "metadata", "status*",
    "metadata.name", "metadata.generateName", "metadata.namespace", "metadata.selfLink", "metadata.uid",
    "metadata.resourceVersion", "metadata.generation", "metadata.creationTimestamp", "metadata.deletionTimestamp",
    "metadata.deletionGracePeriodSeconds", "metadata.labels*", "metadata.annotations*", "metadata.ownerReferences*",
    "metadata.finalizers*", "metadata.managedFields*"};

std::string_view group_of(std::string_view api_version) {
  const auto slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string_view() : api_version.substr(0, slash);
}

}  // namespace

TypeSchema::TypeSchema(std::string_view api_version, std::string_view kind,
                       std::initializer_list<std::string_view> fields)
    : api_version_(api_version), kind_(kind) {
  for (auto f : kObjectFields) fields_.emplace(f);
  for (auto f : fields) fields_.emplace(f);
}

bool TypeSchema::free(const std::string& path) const { return fields_.contains(path + "*"); }

bool TypeSchema::known(const std::string& path) const { return fields_.contains(path) || free(path); }

/// The fields the schema lists directly below `parent` ("" for the top), for the error message.
std::string TypeSchema::siblings(const std::string& parent) const {
  const std::string prefix = parent.empty() ? "" : parent + ".";
  std::string out;
  for (const auto& f : fields_) {
    if (!f.starts_with(prefix)) continue;
    std::string_view rest = std::string_view(f).substr(prefix.size());
    if (rest.ends_with('*')) rest.remove_suffix(1);
    if (rest.empty() || rest.find('.') != std::string_view::npos || rest.find('[') != std::string_view::npos) continue;
    out += out.empty() ? "" : ", ";
    out += rest;
  }
  return out;
}

Status TypeSchema::check_members(const nlohmann::json& value, const std::string& path, std::string_view who) const {
  if (value.is_array()) {
    for (const auto& item : value) {
      if (auto s = check_members(item, path + "[]", who); !s.is_ok()) return s;
    }
    return Status::ok();
  }
  if (!value.is_object()) return Status::ok();  // a scalar's type is the decoder's to check
  for (const auto& [key, member] : value.items()) {
    const std::string field = path.empty() ? key : path + "." + key;
    if (!known(field)) {
      if (const std::string items = siblings(path + "[]"); siblings(path).empty() && !items.empty()) {
        return invalid_argument("{}: {} must be a list, not an object (strict decoding, as kubectl apply --validate=strict; "
                                "{} {}[] items have: {})",
                                who, excerpt(path), kind_, path, items);
      }
      return invalid_argument("{}: unknown field \"{}\" (strict decoding, as kubectl apply --validate=strict; {} {} has: {})",
                              who, excerpt(field), kind_, path.empty() ? "the object" : path, siblings(path));
    }
    if (free(field)) continue;
    if (auto s = check_members(member, field, who); !s.is_ok()) return s;
  }
  return Status::ok();
}

Status TypeSchema::check(const nlohmann::json& object, std::string_view who) const {
  auto version = object.find("apiVersion");
  if (version != object.end() && !version->is_string()) {
    return invalid_argument("{}: apiVersion must be a string; {} is {}", who, kind_, api_version_);
  }
  const std::string v = version == object.end() ? api_version_ : version->get<std::string>();  // absent: the served one
  if (v != api_version_) {
    const bool same_group = group_of(v) == group_of(api_version_);
    return invalid_argument("{}: apiVersion \"{}\" {}; {} is served as {}", who, excerpt(v),
                            same_group ? "is not a served version" : "is not this kind's group", kind_, api_version_);
  }
  auto kind = object.find("kind");
  if (kind != object.end() && (!kind->is_string() || kind->get_ref<const std::string&>() != kind_)) {
    return invalid_argument("{}: kind {} is not {}", who, excerpt(kind->dump()), kind_);
  }
  return check_members(object, "", who);
}

Status check_foreign_kind(const nlohmann::json& object, std::string_view who) {
  auto kind = object.find("kind");
  if (kind == object.end() || !kind->is_string() || kind->get_ref<const std::string&>().empty()) {
    return invalid_argument("{}: kind is missing; every object names its kind", who);
  }
  auto version = object.find("apiVersion");
  if (version != object.end() && version->is_string() &&
      group_of(version->get_ref<const std::string&>()) == "scheduling.run.ai") {
    return invalid_argument("{}: KAI's API group scheduling.run.ai has no kind {} that fracpack knows (Queue, PodGroup)", who,
                            excerpt(kind->dump()));
  }
  return Status::ok();
}

}  // namespace fracpack::k8s
