// Go's encoding/json string encoder, for files whose bytes must equal what a Go program (the
// kubelet) writes, because a checksum covers them: the device manager's and the DRA manager's
// checkpoints.
//
// Thread-safety: thread-safe (no shared state).
#ifndef KDP_COMMON_GO_JSON_H_
#define KDP_COMMON_GO_JSON_H_

#include <string>
#include <string_view>

namespace kdp {

// Appends `s` as json.Marshal writes a string: quoted; \", \\, \b, \f, \n, \r, \t; other
// control characters and (HTML escaping, Marshal's default) <, > and & as \u00XX; U+2028 and
// U+2029 escaped; each byte that starts no valid UTF-8 sequence as \ufffd.
void AppendGoJsonString(std::string_view s, std::string* out);

}  // namespace kdp

#endif  // KDP_COMMON_GO_JSON_H_
