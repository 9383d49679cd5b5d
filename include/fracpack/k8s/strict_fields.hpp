// Strict decoding of the objects fracpack reads as the API server types them, the way
// `kubectl apply --validate=strict` does: a field the type does not have is an error, not dropped.
// docs/requests.md rule 24.
#pragma once

#include <initializer_list>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fracpack/core/status.hpp"

namespace fracpack::k8s {

/// The fields of one API type, written as dotted paths below the object ("spec.resources.gpu.quota");
/// "[]" steps into a list's items ("spec.subGroups[].name"); a trailing "*" makes the subtree free
/// ("metadata.labels*": any keys below, as labels and annotations are). ObjectMeta's fields are
/// added to every schema, and `status` is free (its writer is a controller, not the user; `kubectl
/// get -o yaml` prints it).
class TypeSchema {
 public:
  /// `api_version` and `kind` as the API server serves them ("scheduling.run.ai/v2", "Queue").
  TypeSchema(std::string_view api_version, std::string_view kind, std::initializer_list<std::string_view> fields);

  [[nodiscard]] std::string_view api_version() const { return api_version_; }
  [[nodiscard]] std::string_view kind() const { return kind_; }

  /// kInvalidArgument naming `who` and the field: apiVersion not this type's version
  /// (the type's group at another version, such as scheduling.run.ai/v1, says which version is
  /// served; an absent apiVersion is taken as the served one, as a typed client does); kind not
  /// this type's (absent: the caller chose the type); a field the type does not have, with the fields known beside it.
  [[nodiscard]] Status check(const nlohmann::json& object, std::string_view who) const;

 private:
  Status check_members(const nlohmann::json& value, const std::string& path, std::string_view who) const;
  [[nodiscard]] bool known(const std::string& path) const;
  [[nodiscard]] bool free(const std::string& path) const;
  [[nodiscard]] std::string siblings(const std::string& parent) const;

  std::string api_version_;
  std::string kind_;
  std::set<std::string, std::less<>> fields_;
};

/// An object whose kind is not the one a command reads: kInvalidArgument when it names no kind, or
/// claims KAI's API group (scheduling.run.ai) with a kind other than Queue and PodGroup (a
/// misspelt `kind: Queu`, which the API server would refuse too); OK for other groups' kinds, which
/// the caller skips. `who` names the object.
Status check_foreign_kind(const nlohmann::json& object, std::string_view who);

}  // namespace fracpack::k8s
