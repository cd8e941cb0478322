// The kubelet's and API server's naming rules, shared by the SDK (a plugin's resource name is
// checked before it registers) and the manager (Register, pod manifests). Each predicate mirrors
// one apimachinery or kubelet helper named in its comment; the `...Errors` forms return the
// API server's messages word for word, so callers can build field errors that read like the real
// cluster's. `GoQuote` renders strings the way Go's `%q` does, so kubelet texts such as
// `the ResourceName "<n>" is invalid` can be reproduced exactly.
//
// Thread-safe: every function here is pure.
#ifndef KDP_COMMON_RESOURCE_NAME_H_
#define KDP_COMMON_RESOURCE_NAME_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace kdp {

// Limits from k8s.io/apimachinery/pkg/util/validation.
inline constexpr std::size_t kDns1123LabelMaxLength = 63;
inline constexpr std::size_t kDns1123SubdomainMaxLength = 253;
inline constexpr std::size_t kQualifiedNameMaxLength = 63;

// IsDNS1123Label: at most 63 characters matching `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
bool IsDns1123Label(std::string_view value);
// The API server's messages for `value` as a DNS-1123 label (empty when valid), e.g.
// "must be no more than 63 characters", "must not contain dots" (a valid subdomain with dots), or
// "a lowercase RFC 1123 label must consist of ... (e.g. 'my-name',  or '123-abc', regex used for
// validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".
std::vector<std::string> Dns1123LabelErrors(std::string_view value);

// IsDNS1123Subdomain: at most 253 characters, dot-separated labels each matching
// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (no per-label length limit, as upstream).
bool IsDns1123Subdomain(std::string_view value);
// The API server's messages for `value` as a DNS-1123 subdomain (empty when valid).
std::vector<std::string> Dns1123SubdomainErrors(std::string_view value);

// IsQualifiedName: an optional DNS-1123 subdomain prefix and '/', then a name of at most 63
// characters matching `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`. More than one '/' is invalid.
bool IsQualifiedName(std::string_view value);
// The API server's messages for `value` as a qualified name (empty when valid), each prefixed
// "prefix part " or "name part " as upstream.
std::vector<std::string> QualifiedNameErrors(std::string_view value);

// v1helper.IsNativeResource: true when `name` has no '/' (implicitly kubernetes.io/) or contains
// "kubernetes.io/" anywhere (so "foo.kubernetes.io/bar" is native too).
bool IsNativeResourceName(std::string_view name);

// v1helper.IsExtendedResourceName, the kubelet's test for a device-plugin resource: `name` is not
// native (it contains '/' and no "kubernetes.io/"), does not start with "requests.", and
// "requests." + name is a qualified name (so the prefix part may be at most 253 - 9 characters
// and must be lower case). Examples: "example.com/gpu" is valid; "gpu", "kubernetes.io/gpu",
// "Example.com/gpu", "requests.example.com/gpu" and "example.com/a/b" are not.
bool IsExtendedResourceName(std::string_view name);

// OK when IsExtendedResourceName(name); otherwise INVALID_ARGUMENT with exactly the kubelet's
// Register text: `the ResourceName "<name>" is invalid` (name quoted as by GoQuote).
[[nodiscard]] absl::Status ValidateExtendedResourceName(std::string_view name);

// Go's strconv.Quote (`%q`): double quotes, with '"' and '\' backslash-escaped, \a \b \f \n \r \t
// \v for those controls, \xNN for other ASCII controls, DEL and bytes that are not valid UTF-8,
// \uNNNN for C1 controls, U+00A0 and U+00AD. Other valid UTF-8 is copied as is (Go also escapes
// the few remaining non-printable code points; kdp does not carry Unicode's tables).
std::string GoQuote(std::string_view value);

}  // namespace kdp

#endif  // KDP_COMMON_RESOURCE_NAME_H_
