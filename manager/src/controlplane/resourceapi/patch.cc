#include "manager/src/controlplane/resourceapi/patch.h"

#include <algorithm>
#include <cstddef>
#include <exception>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"

namespace kdp::manager::resourceapi {

using Json = nlohmann::json;
namespace {

constexpr char kJsonPatchType[] = "application/json-patch+json";
constexpr char kMergePatchType[] = "application/merge-patch+json";
constexpr char kStrategicMergePatchType[] = "application/strategic-merge-patch+json";
constexpr char kApplyPatchType[] = "application/apply-patch+yaml";

// strategicpatch's directives.
constexpr char kPatchDirective[] = "$patch";
constexpr char kRetainKeys[] = "$retainKeys";
constexpr char kDeleteFromPrimitiveList[] = "$deleteFromPrimitiveList";
constexpr char kSetElementOrder[] = "$setElementOrder";

// mergepatch's error texts (k8s.io/apimachinery/pkg/util/mergepatch/errors.go).
constexpr char kBadPrimitiveList[] = "invalid patch format of primitive list";
constexpr char kBadRetainKeys[] = "invalid patch format of retainKeys";
constexpr char kBadSetElementOrder[] = "invalid patch format of setElementOrder list";
constexpr char kNoListOfLists[] = "lists of lists are not supported";

// handlers.maxJSONPatchOperations.
constexpr size_t kMaxJsonPatchOperations = 10000;
// The merges recurse once per level of the patch, as do nlohmann's copies and comparisons: a
// 3 MB body of '[' must not exhaust an HTTP worker's stack. Real objects nest a few dozen levels.
constexpr int kMaxNestingDepth = 1000;

absl::Status BadRequest(absl::string_view message) { return absl::InvalidArgumentError(message); }

// The deepest nesting of objects and arrays in `text`, scanned without building anything.
int NestingDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (!escaped && c == '"') in_string = false;
      escaped = !escaped && c == '\\';
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

// nlohmann's exception text without its "[json.exception.parse_error.101] " prefix.
std::string ExceptionDetail(const std::exception& e) {
  const std::string_view what = e.what();
  const size_t end = what.starts_with("[json.exception.") ? what.find("] ") : what.npos;
  return std::string(end == what.npos ? what : what.substr(end + 2));
}

absl::StatusOr<Json> ParseBody(std::string_view body) {
  if (NestingDepth(body) > kMaxNestingDepth) {
    return BadRequest(
        absl::StrCat("error decoding patch: exceeded max depth of ", kMaxNestingDepth));
  }
  try {
    return Json::parse(body);
  } catch (const Json::exception& e) {
    return BadRequest(absl::StrCat("error decoding patch: ", ExceptionDetail(e)));
  }
}

constexpr char kMapType[] = "map[string]interface {}";
constexpr char kListType[] = "[]interface {}";

// How Go's encoding/json names a value's kind: "cannot unmarshal array into ...".
const char* JsonKind(const Json& value) {
  if (value.is_number()) return "number";
  return value.is_boolean() ? "bool" : value.type_name();
}

// mergepatch.ErrBadArgType, naming the Go type the value decodes to.
absl::Status BadArgType(const char* expected, const Json& actual) {
  const char* type = actual.is_object()         ? kMapType
                     : actual.is_array()        ? kListType
                     : actual.is_number_float() ? "float64"
                     : actual.is_number()       ? "int64"
                     : actual.is_null()         ? "<nil>"
                                                : actual.type_name();
  return BadRequest(absl::StrCat("expected a ", expected, ", but received a ", type));
}

absl::Status UnknownPatchType(const Json& directive, const Json& map) {
  // Go's %v prints a string unquoted.
  const std::string type = directive.is_string() ? directive.get<std::string>() : directive.dump();
  return BadRequest(absl::StrCat("unknown patch type: ", type, " in map: ", map.dump()));
}

// The element of a list merged by `merge_key` is a map that carries the key.
absl::Status RequireKeyedMap(const Json& element, std::string_view merge_key) {
  if (!element.is_object()) return BadArgType(kMapType, element);
  if (element.contains(merge_key)) return absl::OkStatus();
  return BadRequest(absl::StrCat("map: ", element.dump(),
                                 " does not contain declared merge key: ", std::string(merge_key)));
}

// validateMergeKeyInLists.
absl::Status ValidateMergeKeys(const Json& list, std::string_view merge_key) {
  for (const Json& element : list) KDP_RETURN_IF_ERROR(RequireKeyedMap(element, merge_key));
  return absl::OkStatus();
}

absl::StatusOr<Json> ApplyJsonPatch(const Json& original, std::string_view body) {
  KDP_ASSIGN_OR_RETURN(const Json operations, ParseBody(body));
  if (!operations.is_array()) {
    return BadRequest(absl::StrCat("json: cannot unmarshal ", JsonKind(operations),
                                   " into Go value of type jsonpatch.Patch"));
  }
  if (operations.size() > kMaxJsonPatchOperations) {
    return RequestEntityTooLargeError(
        absl::StrCat("The allowed maximum operations in a JSON patch is ", kMaxJsonPatchOperations,
                     ", got ", operations.size()));
  }
  // One operation at a time, so a failure names the operation (all or nothing still holds: the
  // working copy is dropped on any error). What got here decoded (jsonpatch.DecodePatch); what
  // fails from here on fails in Apply, which the API server answers 422, not 400.
  Json patched = original;
  for (const Json& operation : operations) {
    if (!operation.is_object()) {
      return BadRequest(absl::StrCat("json: cannot unmarshal ", JsonKind(operation),
                                     " into Go value of type jsonpatch.Operation"));
    }
    const Json op = operation.value("op", Json());
    const std::string kind = op.is_string() ? op.get<std::string>() : "unknown";
    const Json path = operation.value("path", Json());
    const std::string where = path.is_string() ? path.get<std::string>() : path.dump();
    if (kind != "add" && kind != "remove" && kind != "replace" && kind != "move" &&
        kind != "copy" && kind != "test") {
      // evanphx/json-patch's text.
      return UnprocessableEntityError(absl::StrCat("Unexpected kind: ", kind));
    }
    try {
      patched.patch_inplace(Json::array({operation}));
    } catch (const Json::other_error&) {  // 501: a test that did not hold
      return UnprocessableEntityError(
          absl::StrCat("testing value ", where, " failed: test failed"));
    } catch (const Json::exception& e) {
      const std::string at = path.is_string() ? absl::StrCat("path \"", where, "\": ") : "";
      return UnprocessableEntityError(
          absl::StrCat(kind, " operation does not apply: ", at, ExceptionDetail(e)));
    }
  }
  return patched;
}

absl::StatusOr<Json> ApplyMergePatch(const Json& original, std::string_view body) {
  absl::StatusOr<Json> patch = ParseBody(body);
  // evanphx/json-patch's MergePatch answers ErrBadJSONPatch for a body that does not parse or is
  // null; anything but an object cannot be merged into an object either.
  if (!patch.ok() && NestingDepth(body) > kMaxNestingDepth) return patch.status();
  if (!patch.ok() || !patch->is_object()) return BadRequest("Invalid JSON Patch");
  Json patched = original;
  patched.merge_patch(*patch);  // RFC 7386: null deletes, objects merge, the rest replaces
  return patched;
}

// Strategic merge patch, after k8s.io/apimachinery/pkg/util/strategicpatch (mergeMap and the
// functions it calls, with MergeParallelList and IgnoreUnmatchedNulls as the server sets them).

std::string Join(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(std::string(path), ".", std::string(key));
}

// The `$prefix/field` directive's field; `error` when the key is not exactly that shape.
absl::StatusOr<std::string> DirectiveField(std::string_view key, std::string_view prefix,
                                           absl::string_view error) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos || key.substr(0, slash) != prefix) return BadRequest(error);
  return std::string(key.substr(slash + 1));
}

// What an element is compared by: its merge key's value for maps (null when it has none, as
// index() in patch.go does), the element itself for primitives.
const Json& Identity(const Json& element, std::string_view merge_key) {
  static const Json* const kNull = new Json();
  if (merge_key.empty()) return element;
  if (!element.is_object()) return *kNull;
  const auto it = element.find(merge_key);
  return it == element.end() ? *kNull : *it;
}

bool Contains(const Json& list, const Json& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// The position of `element` in `order` by identity; -1 when absent.
int IndexIn(const Json& order, const Json& element, std::string_view merge_key) {
  const Json& identity = Identity(element, merge_key);
  for (size_t i = 0; i < order.size(); ++i) {
    if (Identity(order[i], merge_key) == identity) return static_cast<int>(i);
  }
  return -1;
}

// Orders a merged list as the API server does (partition, then normalizeElementOrder): the
// items `patch_order` names in its order, the others (server-only) in `server_order`'s, the two
// interleaved so that a server-only item stays ahead of the patch items it preceded on the server
// (mergeSortedSlice). A new item therefore lands right after the patch item before it, or first:
// `kubectl patch` adding one container puts it at the front, as the API server does.
absl::StatusOr<Json> Arrange(Json merged, const Json& patch_order, const Json& server_order,
                             std::string_view merge_key) {
  if (!merge_key.empty()) {
    KDP_RETURN_IF_ERROR(ValidateMergeKeys(patch_order, merge_key));
    KDP_RETURN_IF_ERROR(ValidateMergeKeys(server_order, merge_key));
  }
  Json patch_items = Json::array(), server_only = Json::array();
  for (Json& element : merged) {
    const bool named = IndexIn(patch_order, element, merge_key) >= 0;
    (named ? patch_items : server_only).push_back(std::move(element));
  }
  const auto sort_by = [&](Json& items, const Json& order) {
    std::stable_sort(items.begin(), items.end(), [&](const Json& a, const Json& b) {
      const int ia = IndexIn(order, a, merge_key), ib = IndexIn(order, b, merge_key);
      // An item missing from its order list (a replaced list's new element) sorts last.
      return ia >= 0 && (ib < 0 || ia < ib);
    });
  };
  sort_by(patch_items, patch_order);
  sort_by(server_only, server_order);
  Json arranged = Json::array();
  size_t i = 0, j = 0;
  while (i < server_only.size() && j < patch_items.size()) {
    const int left = IndexIn(server_order, server_only[i], merge_key);
    const int right = IndexIn(server_order, patch_items[j], merge_key);
    if (left >= 0 && right >= 0 && left < right) {
      arranged.push_back(std::move(server_only[i++]));
    } else {
      arranged.push_back(std::move(patch_items[j++]));
    }
  }
  for (; i < server_only.size(); ++i) arranged.push_back(std::move(server_only[i]));
  for (; j < patch_items.size(); ++j) arranged.push_back(std::move(patch_items[j]));
  return arranged;
}

// sliceElementType: every element of both lists has one JSON type, and it is not a list.
absl::StatusOr<Json::value_t> ElementType(const Json& a, const Json& b) {
  std::optional<Json::value_t> type;
  for (const Json* list : {&a, &b}) {
    for (const Json& element : *list) {
      // Go decodes integers as int64 and the rest as float64; both are numbers here.
      const Json::value_t t = element.is_number() ? Json::value_t::number_float : element.type();
      if (t == Json::value_t::array) return BadRequest(kNoListOfLists);
      if (type.has_value() && *type != t) {
        return BadRequest(
            absl::StrCat("list element types are not identical: [", a.dump(), " ", b.dump(), "]"));
      }
      type = t;
    }
  }
  return type.value_or(Json::value_t::null);
}

// validatePatchWithSetOrderList: the patch list's items (deletions and directive-marked items
// aside) appear in the $setElementOrder list in the same relative order.
absl::Status ValidateSetElementOrder(const Json& patch_list, const Json& order,
                                     std::string_view merge_key) {
  if (order.empty() || patch_list.empty()) return absl::OkStatus();
  std::vector<const Json*> items;
  for (const Json& element : patch_list) {
    if (!merge_key.empty() && !element.is_object()) return BadArgType(kMapType, element);
    if (merge_key.empty() || element.value(kPatchDirective, Json()) != "delete") {
      items.push_back(&element);
    }
  }
  size_t p = 0, o = 0;
  while (p < items.size() && o < order.size()) {
    const Json& item = *items[p];
    if (item.is_object() && item.contains(kPatchDirective)) {
      ++p;
      continue;
    }
    if (!merge_key.empty()) {
      KDP_RETURN_IF_ERROR(RequireKeyedMap(item, merge_key));
      KDP_RETURN_IF_ERROR(RequireKeyedMap(order[o], merge_key));
    }
    if (Identity(item, merge_key) == Identity(order[o], merge_key)) ++p;
    ++o;
  }
  if (p < items.size() && o >= order.size()) {
    return BadRequest(absl::StrCat("The order in patch list:\n", patch_list.dump(),
                                   "\n doesn't match ", kSetElementOrder, " list:\n", order.dump(),
                                   "\n"));
  }
  return absl::OkStatus();
}

class StrategicMerger {
 public:
  explicit StrategicMerger(const StrategicMergeSchema& schema) : schema_(schema) {}

  // mergeMap: `patch` (an object) merged into `original` (an object) at `path`.
  absl::StatusOr<Json> MergeMap(Json original, Json patch, const std::string& path) const {
    if (const auto directive = patch.find(kPatchDirective); directive != patch.end()) {
      if (*directive == "replace") {
        patch.erase(directive);
        return MergeMap(Json::object(), std::move(patch), path);
      }
      if (*directive == "delete") return Json::object();
      return UnknownPatchType(*directive, patch);
    }
    if (!original.is_object()) original = Json::object();
    KDP_RETURN_IF_ERROR(RetainKeys(original, patch));
    KDP_RETURN_IF_ERROR(MergeOrderedLists(original, patch, path));
    for (auto& [key, value] : patch.items()) {
      std::string field = key;
      const bool deletion = key.starts_with(kDeleteFromPrimitiveList);
      if (deletion) {
        KDP_ASSIGN_OR_RETURN(field,
                             DirectiveField(key, kDeleteFromPrimitiveList, kBadPrimitiveList));
      }
      const std::string field_path = Join(path, field);
      if (value.is_null()) {  // a null deletes the field; one for an absent field is dropped
        original.erase(field);
        continue;
      }
      auto current = original.find(field);
      if (deletion) {
        // A parallel list of values to remove from a set-like list: `kubectl apply` removing a
        // finalizer. The API server would store it as the list when the list is absent or atomic.
        const std::optional<std::string_view> merge_key = schema_.MergeKey(field_path);
        if (!value.is_array() || !merge_key.has_value() || !merge_key->empty()) {
          return BadRequest(kBadPrimitiveList);
        }
        if (current == original.end() || !current->is_array()) continue;
        KDP_ASSIGN_OR_RETURN(
            *current, MergeList(std::move(*current), std::move(value), "", true, field_path));
        continue;
      }
      if (current == original.end() || current->type() != value.type()) {
        // A field the original lacks (or holds with another type) merges into an empty value, so
        // the nulls and directives inside the patch's value are resolved rather than stored.
        original[field] = value.is_object()  ? Json::object()
                          : value.is_array() ? Json::array()
                                             : Json();
        current = original.find(field);
      }
      if (value.is_object()) {
        KDP_ASSIGN_OR_RETURN(*current, MergeMap(std::move(*current), std::move(value), field_path));
      } else if (const auto merge_key = schema_.MergeKey(field_path);
                 value.is_array() && merge_key.has_value()) {
        KDP_ASSIGN_OR_RETURN(*current, MergeList(std::move(*current), std::move(value), *merge_key,
                                                 false, field_path));
      } else {
        *current = std::move(value);  // a scalar or an atomic list: the patch's value replaces
      }
    }
    return original;
  }

 private:
  // applyRetainKeysDirective: `$retainKeys` lists the keys the object keeps; every other key of
  // the original is cleared, and the patch may set no key outside the list.
  static absl::Status RetainKeys(Json& original, Json& patch) {
    const auto directive = patch.find(kRetainKeys);
    if (directive == patch.end()) return absl::OkStatus();
    const Json retained = std::move(*directive);
    patch.erase(kRetainKeys);
    if (!retained.is_array()) return BadRequest(kBadRetainKeys);
    const auto kept = [&](const std::string& key) { return Contains(retained, Json(key)); };
    for (const auto& [key, value] : patch.items()) {
      const bool parallel_list =
          key.starts_with(kDeleteFromPrimitiveList) || key.starts_with(kSetElementOrder);
      if (!value.is_null() && !parallel_list && !kept(key)) return BadRequest(kBadRetainKeys);
    }
    for (auto it = original.begin(); it != original.end();) {
      it = kept(it.key()) ? std::next(it) : original.erase(it);
    }
    return absl::OkStatus();
  }

  // mergePatchIntoOriginal: each `$setElementOrder/<field>` merges <field>'s list now and orders
  // the result: listed items in the directive's order, the server's other items where they were.
  absl::Status MergeOrderedLists(Json& original, Json& patch, const std::string& path) const {
    std::vector<std::string> directives;
    for (const auto& [key, value] : patch.items()) {
      if (key.starts_with(kSetElementOrder)) directives.push_back(key);
    }
    for (const std::string& key : directives) {
      const Json order = std::move(patch[key]);
      patch.erase(key);
      if (!order.is_array()) return BadArgType(kListType, order);
      KDP_ASSIGN_OR_RETURN(const std::string field,
                           DirectiveField(key, kSetElementOrder, kBadSetElementOrder));
      const auto stored = original.find(field);
      const auto patched = patch.find(field);
      const bool in_original = stored != original.end(), in_patch = patched != patch.end();
      if (in_original && !stored->is_array()) return BadArgType(kListType, *stored);
      if (in_patch && !patched->is_array()) return BadArgType(kListType, *patched);
      if (!in_original && !in_patch) continue;
      const std::string field_path = Join(path, field);
      const std::optional<std::string_view> merge_key = schema_.MergeKey(field_path);
      const std::string_view key_name = merge_key.value_or("");
      const Json patch_list = in_patch ? *patched : Json::array();
      KDP_RETURN_IF_ERROR(ValidateSetElementOrder(patch_list, order, key_name));
      const Json server_order = in_original ? *stored : Json::array();
      Json merged = in_patch ? patch_list : server_order;  // atomic: nothing to merge or order
      if (merge_key.has_value()) {
        if (in_patch) {
          KDP_ASSIGN_OR_RETURN(merged,
                               MergeList(server_order, patch_list, key_name, false, field_path));
        }
        KDP_ASSIGN_OR_RETURN(merged, Arrange(std::move(merged), order, server_order, key_name));
      }
      original[field] = std::move(merged);
      patch.erase(field);
    }
    return absl::OkStatus();
  }

  // mergeSlice: a list with patchStrategy merge. Maps merge by `merge_key` ({"$patch": "delete"}
  // removes, an element {"$patch": "replace"} makes the patch's other elements the whole list);
  // primitives merge as a set, or, for a `$deleteFromPrimitiveList` list (`deletion`), are
  // removed. The result is ordered by Arrange with the patch's order.
  absl::StatusOr<Json> MergeList(Json original, Json patch, std::string_view merge_key,
                                 bool deletion, const std::string& path) const {
    if (original.empty() && patch.empty()) return original;
    KDP_ASSIGN_OR_RETURN(const Json::value_t type, ElementType(original, patch));
    const bool maps = type == Json::value_t::object;
    Json merged = Json::array();
    if (!maps) {
      if (deletion) {
        for (Json& element : original) {
          if (!Contains(patch, element)) merged.push_back(std::move(element));
        }
        return merged;
      }
      for (const Json* list : {&original, &patch}) {
        for (const Json& element : *list) {
          if (!Contains(merged, element)) merged.push_back(element);
        }
      }
    } else {
      if (deletion) return BadRequest(kBadPrimitiveList);
      if (merge_key.empty()) {
        return BadRequest("cannot merge lists without merge key for type string");
      }
      KDP_RETURN_IF_ERROR(ValidateMergeKeys(original, merge_key));
      // mergeSliceWithSpecialElements.
      Json plain = Json::array();
      bool replace = false;
      for (Json& element : patch) {
        const auto directive = element.find(kPatchDirective);
        if (directive == element.end()) {
          plain.push_back(std::move(element));
        } else if (*directive == "delete") {
          KDP_RETURN_IF_ERROR(RequireKeyedMap(element, merge_key));
          for (auto it = original.begin(); it != original.end();) {
            it =
                Identity(*it, merge_key) == element[merge_key] ? original.erase(it) : std::next(it);
          }
        } else if (*directive == "replace") {
          replace = true;
        } else if (*directive == "merge") {
          return BadRequest("merging lists cannot yet be specified in the patch");
        } else {
          return UnknownPatchType(*directive, element);
        }
      }
      if (replace) original = std::exchange(plain, Json::array());
      // mergeSliceWithoutSpecialElements: update the element with the same key, else append.
      merged = original;
      const std::string element_path = absl::StrCat(path, "[]");
      for (Json& element : plain) {
        KDP_RETURN_IF_ERROR(RequireKeyedMap(element, merge_key));
        const auto match = std::find_if(merged.begin(), merged.end(), [&](const Json& stored) {
          return Identity(stored, merge_key) == element[merge_key];
        });
        Json& target = match != merged.end() ? *match : merged.emplace_back(Json::object());
        KDP_ASSIGN_OR_RETURN(target, MergeMap(std::move(target), element, element_path));
      }
      patch = std::move(plain);
    }
    return Arrange(std::move(merged), patch, original, merge_key);
  }

  const StrategicMergeSchema& schema_;
};

absl::StatusOr<Json> ApplyStrategicMergePatch(const Json& original, std::string_view body,
                                              const StrategicMergeSchema& schema) {
  KDP_ASSIGN_OR_RETURN(Json patch, ParseBody(body));
  if (patch.is_null()) return original;  // Go's Unmarshal leaves the map empty: no change
  if (!patch.is_object()) {
    return BadRequest(absl::StrCat("json: cannot unmarshal ", JsonKind(patch),
                                   " into Go value of type map[string]interface {}"));
  }
  return StrategicMerger(schema).MergeMap(original, std::move(patch), "");
}

// A schema of `rules` and the metadata rules every kind shares (metav1.ObjectMeta's tags).
const StrategicMergeSchema* WithMetadata(std::vector<StrategicMergeSchema::MergeList> rules) {
  rules.push_back({"metadata.ownerReferences", "uid"});
  rules.push_back({"metadata.finalizers", ""});
  return new StrategicMergeSchema(rules);
}

}  // namespace

std::optional<PatchType> PatchTypeFromContentType(std::string_view content_type) {
  std::string_view media_type = content_type.substr(0, content_type.find(';'));
  media_type.remove_prefix(std::min(media_type.find_first_not_of(" \t"), media_type.size()));
  media_type.remove_suffix(media_type.size() - (media_type.find_last_not_of(" \t") + 1));
  if (media_type == kJsonPatchType) return PatchType::kJsonPatch;
  if (media_type == kMergePatchType) return PatchType::kMergePatch;
  if (media_type == kStrategicMergePatchType) return PatchType::kStrategicMergePatch;
  if (media_type == kApplyPatchType) return PatchType::kApplyPatch;
  return std::nullopt;
}

std::string UnsupportedPatchMediaTypeMessage() {
  return absl::StrCat(
      "the body of the request was in an unknown format - accepted media types include: ",
      kJsonPatchType, ", ", kMergePatchType, ", ", kStrategicMergePatchType, ", ", kApplyPatchType);
}

StrategicMergeSchema::StrategicMergeSchema(const std::vector<MergeList>& merge_lists) {
  for (const MergeList& list : merge_lists) merge_keys_[list.path] = list.merge_key;
}

std::optional<std::string_view> StrategicMergeSchema::MergeKey(std::string_view path) const {
  const auto it = merge_keys_.find(path);
  if (it == merge_keys_.end()) return std::nullopt;
  return std::string_view(it->second);
}

const StrategicMergeSchema& PodSchema() {
  static const StrategicMergeSchema* const kSchema = [] {
    std::vector<StrategicMergeSchema::MergeList> rules = {
        {"spec.volumes", "name"},         {"spec.imagePullSecrets", "name"},
        {"spec.hostAliases", "ip"},       {"spec.topologySpreadConstraints", "topologyKey"},
        {"spec.schedulingGates", "name"}, {"spec.resourceClaims", "name"},
        {"status.conditions", "type"},    {"status.hostIPs", "ip"},
        {"status.podIPs", "ip"},          {"status.resourceClaimStatuses", "name"},
    };
    // Container and EphemeralContainerCommon carry the same tags.
    for (const char* containers : {"initContainers", "containers", "ephemeralContainers"}) {
      const std::string list = absl::StrCat("spec.", containers);
      rules.push_back({list, "name"});
      rules.push_back({absl::StrCat(list, "[].ports"), "containerPort"});
      rules.push_back({absl::StrCat(list, "[].env"), "name"});
      rules.push_back({absl::StrCat(list, "[].volumeMounts"), "mountPath"});
      rules.push_back({absl::StrCat(list, "[].volumeDevices"), "devicePath"});
    }
    return WithMetadata(std::move(rules));
  }();
  return *kSchema;
}

const StrategicMergeSchema& NamespaceSchema() {
  static const StrategicMergeSchema* const kSchema = WithMetadata({{"status.conditions", "type"}});
  return *kSchema;
}

const StrategicMergeSchema& EventSchema() { return GenericSchema(); }

const StrategicMergeSchema& ResourceClaimSchema() {
  static const StrategicMergeSchema* const kSchema = WithMetadata({{"status.reservedFor", "uid"}});
  return *kSchema;
}

const StrategicMergeSchema& GenericSchema() {
  static const StrategicMergeSchema* const kSchema = WithMetadata({});
  return *kSchema;
}

absl::StatusOr<Json> ApplyPatch(const Json& original, std::string_view patch, PatchType type,
                                const StrategicMergeSchema& schema) {
  if (!original.is_object()) return absl::InvalidArgumentError("the stored object is not a map");
  switch (type) {
    case PatchType::kJsonPatch:
      return ApplyJsonPatch(original, patch);
    case PatchType::kMergePatch:
      return ApplyMergePatch(original, patch);
    case PatchType::kStrategicMergePatch:
      return ApplyStrategicMergePatch(original, patch, schema);
    case PatchType::kApplyPatch:
      break;
  }
  return absl::UnimplementedError(absl::StrCat(
      "server-side apply (", kApplyPatchType,
      ") is not supported by this server: use client-side kubectl apply or a JSON, merge or "
      "strategic merge patch"));
}

}  // namespace kdp::manager::resourceapi
