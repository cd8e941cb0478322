# extract_doc_blocks.awk: turns the shell code blocks of one Markdown file into one bash script
# (for tests/docs/run_doc_blocks.sh, which documents the rules) and a report of what it did.
#
#   awk -v script=OUT.sh -v report=OUT.report -f extract_doc_blocks.awk DOC.md
#
# A shell block is a fenced block (``` or ~~~, indented by up to three spaces) whose info string
# starts with sh, bash, shell or console. Other blocks (cpp, yaml, json, output without a
# language) are not commands and are ignored. A shell block preceded, on the line right before its
# fence, by
#
#     <!-- doc-test: skip (REASON) -->
#
# is not run; REASON must not be empty. In a console block only the lines after a "$ " prompt
# (and their backslash continuations) are commands; the rest is output.
#
# The script gets, for each block run, a line setting doc_block=FILE:LINE and the block's lines
# as written, except that a command whose first word is cmake (the build the test does not repeat)
# becomes a no-op that says so. Report lines, one per block or problem:
#
#   RUN LINE                 a block that was written to the script
#   SKIP LINE REASON         a marked block
#   CMAKE LINE               a cmake command that was left out
#   ERROR LINE MESSAGE       the document breaks a rule (nothing should be run)
#
# Checked on every block that is run, so that the test cannot do harm on a CI host: no sudo, no
# package manager, no container build, no cluster tool, no full build or test script; and every
# kdp-manager, kdp-gpu-plugin, kdp-dra-driver and kdpctl command names --kubelet-root (their
# default is the host's /var/lib/kubelet); no fixed /tmp/... path (a second run would find the
# first one's state). Plain awk (POSIX, mawk included): no interval
# expressions, no gensub.

function report_line(kind, line, text) {
  printf "%s %d%s\n", kind, line, (text == "" ? "" : " " text) >> report
}
function error(line, msg) {
  report_line("ERROR", line, msg)
}
# Sets fence_char, fence_len, fence_indent and fence_info for an opening fence; returns 1 on one.
function opening_fence(line,    rest, run) {
  if (!match(line, /^ ? ? ?(```+|~~~+)/)) return 0
  fence_indent = line
  sub(/[`~].*$/, "", fence_indent)
  fence_indent = length(fence_indent)
  rest = substr(line, fence_indent + 1)
  fence_char = substr(rest, 1, 1)
  run = rest
  if (fence_char == "`") {
    sub(/[^`].*$/, "", run)
    if (index(substr(rest, length(run) + 1), "`") > 0) return 0  # an inline code span
  } else {
    sub(/[^~].*$/, "", run)
  }
  fence_len = length(run)
  fence_info = substr(rest, fence_len + 1)
  sub(/^[ \t]+/, "", fence_info)
  sub(/[ \t{].*$/, "", fence_info)
  return 1
}
function closing_fence(line,    rest) {
  if (!match(line, /^ ? ? ?(```+|~~~+)[ \t]*$/)) return 0
  rest = line
  sub(/^ */, "", rest)
  sub(/[ \t]*$/, "", rest)
  return substr(rest, 1, 1) == fence_char && length(rest) >= fence_len
}
# Removes up to fence_indent leading spaces, as CommonMark does for an indented fence.
function unindent(line,    n) {
  n = 0
  while (n < fence_indent && substr(line, 1, 1) == " ") {
    line = substr(line, 2)
    n++
  }
  return line
}
function shell_quote(s) {
  gsub(/'/, "'\\''", s)
  return "'" s "'"
}
# Checks one logical command line (continuations joined) of a block that will be run.
function check_command(line, text,    words, n, i, w, base, kdp_program) {
  sub(/(^|[ \t])#.*$/, "", text)  # a trailing comment is prose
  gsub(/[;&|()<>{}"'`]/, " ", text)
  n = split(text, words, /[ \t]+/)
  kdp_program = ""
  for (i = 1; i <= n; i++) {
    w = words[i]
    base = w
    sub(/^.*\//, "", base)
    sub(/^[A-Za-z_][A-Za-z_0-9]*=/, "", base)  # K=kdpctl
    if (base == "sudo" || base == "su" || base == "apt-get" || base == "apt" || base == "dpkg" ||
        base == "docker" || base == "podman" || base == "buildah" || base == "kustomize" ||
        base == "cpack" || base == "ctest" || w ~ /(^|\/)scripts\/(test|demo|deps|fuzz)$/) {
      error(line, "an unmarked block runs " w "; mark it <!-- doc-test: skip (REASON) -->")
    }
    if (w ~ /^([A-Za-z_][A-Za-z_0-9]*=)?\/tmp\//) {
      error(line, w " is a fixed path: a second run, or another user, finds the first one's " \
                  "files; use mktemp -d")
    }
    if (base == "kdp-manager" || base == "kdp-gpu-plugin" || base == "kdp-dra-driver" ||
        base == "kdpctl") {
      kdp_program = w
    }
  }
  if (kdp_program != "" && text !~ /--kubelet-root/ && text !~ /(^|[ \t])(checkpoint|--help|-h)([ \t]|$)/) {
    error(line, kdp_program " without --kubelet-root would use the host's /var/lib/kubelet")
  }
}
# Writes one logical command of a block that is run (the physical lines in `cmd`).
function emit_command(line, cmd, first_word) {
  first_word = cmd
  sub(/^[ \t]+/, "", first_word)
  sub(/[ \t].*$/, "", first_word)
  if (first_word == "cmake") {
    report_line("CMAKE", line, "")
    gsub(/\n/, " ", cmd)
    print "printf 'doc-test: not run (the test uses the build under test): %s\\n' " \
          shell_quote(cmd) >> script
    return
  }
  check_command(line, cmd)
  print cmd >> script
}

BEGIN {
  in_block = 0
  marker_line = 0
}

{
  raw = $0
  sub(/\r$/, "", raw)
}

# Outside a block: markers and opening fences.
!in_block {
  if (raw ~ /^ ? ? ?<!-- *doc-test:/) {
    if (marker_line) error(marker_line, "doc-test marker not followed by a code block")
    marker = raw
    if (marker !~ /^ ? ? ?<!-- *doc-test: *skip *\(.*[^ ].*\) *--> *$/) {
      error(FNR, "a doc-test marker reads <!-- doc-test: skip (REASON) -->")
      marker_line = 0
      next
    }
    sub(/^ ? ? ?<!-- *doc-test: *skip *\( */, "", marker)
    sub(/ *\) *--> *$/, "", marker)
    marker_line = FNR
    next
  }
  if (opening_fence(raw)) {
    in_block = 1
    block_line = FNR
    lang = fence_info
    shell = (lang == "sh" || lang == "bash" || lang == "shell" || lang == "console")
    run = 0
    if (marker_line) {
      if (!shell) error(marker_line, "doc-test marker before a " (lang == "" ? "plain" : lang) \
                                      " block; only sh, bash, shell and console blocks run")
      else report_line("SKIP", block_line, marker)
    } else if (shell) {
      run = 1
      report_line("RUN", block_line, "")
      print "" >> script
      print "doc_block=" shell_quote(FILENAME ":" block_line) >> script
      print "printf '\\n== %s\\n' \"$doc_block\"" >> script
    }
    marker_line = 0
    pending = ""
    pending_line = 0
    next
  }
  if (marker_line) {
    error(marker_line, "doc-test marker not followed by a code block on the next line")
    marker_line = 0
  }
  next
}

# Inside a block.
{
  if (closing_fence(raw)) {
    if (run && pending != "") error(pending_line, "the block ends inside a continued line")
    in_block = 0
    next
  }
  if (!run) next
  line = unindent(raw)
  if (lang == "console") {
    if (pending == "") {
      if (line !~ /^\$ /) next  # output
      line = substr(line, 3)
    }
  }
  if (pending == "") {
    pending = line
    pending_line = FNR
  } else {
    pending = pending "\n" line
  }
  if (line ~ /(\\|\||&&)[ \t]*$/) next  # continued on the next line (\, a pipe, &&)
  emit_command(pending_line, pending)
  pending = ""
}

END {
  if (in_block) error(block_line, "code block never closed")
  if (marker_line) error(marker_line, "doc-test marker not followed by a code block")
}
