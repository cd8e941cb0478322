#!/usr/bin/env python3
"""check_docs.py: the file names, flags and versions the documentation quotes are true.

    tests/docs/check_docs.py --root SOURCE_DIR [--program NAME=PATH]... [--build-dir DIR] [DOC...]

Reads README.md, docs/*.md and examples/*/README.md under SOURCE_DIR (or the DOCs given,
relative to it) and prints one line per broken rule:

    FILE:LINE: RULE: 'QUOTED TEXT': what is wrong

Exit status: 0 when every rule holds, 1 when one is broken, 2 on bad usage or when a program
named for the flag rule cannot be run. Python 3 standard library only.

The rules
---------
Markdown is read as GitHub renders it: fenced blocks (``` or ~~~), headings, tables, inline code
spans and links; HTML comments are not read. A line `<!-- docs-check: skip (REASON) -->` right
before a fenced block or a line exempts that block or line from every rule (REASON must say why,
or the marker is itself a problem; use it for text that quotes something on purpose, e.g. an old
release's output).

path     Every repository path the text quotes exists. A repository path is a word whose first
         component is a top-level entry of the repository (`manager/src/foo.cc`, `scripts/demo`,
         `deploy/kubernetes/`), anywhere: prose, code spans, tables, fenced blocks. build/ and
         hidden entries are not repository paths (build outputs, `build/default/...`). In a
         document below the root, a word whose first component is an entry of the document's own
         directory (`manifests/pod.yaml` in examples/dra-driver/README.md) is resolved there.
         Forms: a trailing `/` must be a directory; `<placeholder>` components and `*` are
         wildcards and `{a,b}` alternatives, every alternative must match something; `...` or
         `…` ends the checked part (`deploy/...` checks `deploy/`); `:LINE` suffixes are dropped.
link     Every relative Markdown link `[text](target)` resolves (relative to the document, or to
         the root for `/target`), and its `#anchor`, in this document or a linked .md file,
         names a heading (GitHub's anchors: lower-case, punctuation dropped, spaces to `-`,
         `-1`, `-2` for repeats).
input    In a shell block that the doc-block test runs (sh/bash/shell/console without a
         doc-test skip marker), the file given to `-f`/`--filename` (kdpctl apply, kubectl
         apply) exists, relative to the root, unless it is `-`, holds a `$` or a glob, or an
         earlier block of the document wrote it (`> FILE`).
flag     Every `--flag` quoted for a kdp program (kdp-manager, kdpctl, kdp-conformance,
         kdp-gpu-plugin, kdp-dra-driver, kdp-topology, kdp-cdi-validate) is among the options its
         `--help` lists (lines of the help that start with `-`; kdpctl and kdp-conformance: the
         program's `--help` and each subcommand's,
         `kdpctl checkpoint convert --help` for `kdpctl checkpoint convert --to v2`). A flag is
         attributed to a program in exactly these places, and nowhere else:
         1. Commands. In a shell block (sh, bash, shell, console), and in an inline code span
            that is a command (`kdpctl topology [--svg FILE]`), a simple command whose command
            word is the program: its bare name, a path ending in `/NAME`
            (`build/default/manager/kdpctl`), or a variable an earlier assignment of the
            document bound to one (`K="$B/manager/kdpctl --kubelet-root $R"`, then `$K status`).
            The command word is the first word after variable assignments and the transparent
            prefixes sudo, exec, nohup, env, time, command, setsid, `!`,
            until/while/if/then/do/else/elif, `timeout DURATION` and `taskset [-c] CPUS`. Every
            `--flag` after it up to the end of the simple command (`|`, `;`, `&`, `&&`, `||`,
            `)`) or a bare `--` is the program's, checked against the help of the program and
            of the subcommands named so far. A command led by any other word (kubectl, cmake,
            docker, perf, valgrind, a Go driver) is not checked: its flags are not kdp's.
            Heredoc bodies are not commands.
         2. Usage synopses: in a fenced block without a language, a line that starts with a
            program's bare name (`kdp-manager [--kubelet-root DIR] ...`) and the lines indented
            under it that start with `[` or `-`.
         3. Flag tables: the first cell of a table row that starts with a code span of a flag
            (`| `--kubelet-root DIR` | ...`, `| `-o, --output FORMAT` | ...`) is a flag of the
            program the innermost heading naming exactly one kdp program names (`# Running
            kdp-manager`, `# kdpctl`): of the program or any of its subcommands.
         4. Prose: a code span that is only a flag (`--flag`, `--flag VALUE`, `--flag=VALUE`)
            right after a kdp program's name or possessive (`kdp-manager's `--node-name``) is
            that program's (or a subcommand's). One right after another tool's name or
            possessive (`the kubelet's `--root-dir``, `the driver's `--cdi-root``) is foreign
            and not checked. Any other, in a section whose innermost program-naming heading
            names one program, must be a flag of some kdp program (a page about kdp-manager
            quotes kdpctl's flags too); in a section naming none, it is not attributed.
version  A CMake version quoted as the minimum (`CMake ≥ 3.25`, `CMake >= 3.25`, `cmake 3.25`,
         `cmake_minimum_required(VERSION 3.25)` in a code block) is the root CMakeLists.txt's
         `cmake_minimum_required` (major.minor); a kdp version quoted (`find_package(kdp 0.1`,
         `kdp 0.1.0`, image tags and package files `kdp-gpu-plugin:0.1.0`, `kdp-manager_0.1.0`)
         equals the leading components of `project(kdp VERSION ...)`.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field

PROGRAMS = ("kdp-manager", "kdpctl", "kdp-conformance", "kdp-gpu-plugin", "kdp-dra-driver",
            "kdp-topology", "kdp-cdi-validate")
# Where each program is in a build tree (--build-dir).
PROGRAM_PATHS = {
    "kdp-manager": "manager/kdp-manager",
    "kdpctl": "manager/kdpctl",
    "kdp-conformance": "manager/kdp-conformance",
    "kdp-gpu-plugin": "examples/gpu-plugin/kdp-gpu-plugin",
    "kdp-dra-driver": "examples/dra-driver/kdp-dra-driver",
    "kdp-topology": "sdk/kdp-topology",
    "kdp-cdi-validate": "sdk/kdp-cdi-validate",
}
SHELL_LANGUAGES = ("sh", "bash", "shell", "console")
TRANSPARENT_WORDS = {"sudo", "exec", "nohup", "env", "time", "command", "setsid", "!", "until",
                     "while", "if", "then", "do", "else", "elif"}
# Other tools whose flags prose may quote: a flag span right after one of these (or after a
# possessive "X's" of a name that is not a kdp program) is not attributed to a kdp program.
FOREIGN_TOOLS = {"kubelet", "kubectl", "kubeadm", "kube-apiserver", "cmake", "ctest", "cpack",
                 "ninja", "docker", "podman", "buildah", "kustomize", "helm", "perf", "lstopo",
                 "go", "git", "curl", "valgrind", "heaptrack", "gdb", "apt-get", "dpkg",
                 "containerd", "crictl", "clang", "gcc", "pkg-config", "scripts/fuzz",
                 "scripts/test", "scripts/demo", "helper", "driver"}

SKIP_MARKER = re.compile(r"^\s*<!--\s*docs-check:\s*skip\s*\((.*)\)\s*-->\s*$")
DOC_TEST_SKIP = re.compile(r"^\s*<!--\s*doc-test:\s*skip\b")
FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^`\s{]*)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"(?<!\!)\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
IMAGE_LINK = re.compile(r"!\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FLAG = re.compile(r"^--([A-Za-z][A-Za-z0-9_-]*)(?:=.*)?$")
HTML_COMMENT = re.compile(r"<!--.*?-->")
# How many quotes each rule checked (the summary line), and with --verbose what they were.
CHECKED: dict[str, int] = {"path": 0, "link": 0, "input": 0, "flag": 0, "version": 0}
VERBOSE: list[bool] = [False]


def checked(rule: str, doc: "Doc", number: int, what: str) -> None:
    CHECKED[rule] += 1
    if VERBOSE[0]:
        print(f"{doc.path}:{number}: checked {rule}: {what}")


@dataclass
class Problem:
    doc: str
    line: int
    rule: str
    quoted: str
    message: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.rule}: '{self.quoted}': {self.message}"


@dataclass
class Block:
    """A fenced block: its info string, first content line number and lines."""
    language: str
    line: int
    lines: list[str]
    doc_test_skipped: bool


@dataclass
class Doc:
    path: str  # relative to the root
    lines: list[str]
    blocks: list[Block] = field(default_factory=list)
    # Every line outside fenced blocks: (line number, text, heading stack [(level, text)] there).
    prose: list[tuple[int, str, list[tuple[int, str]]]] = field(default_factory=list)
    skipped_lines: set[int] = field(default_factory=set)
    anchors: set[str] = field(default_factory=set)
    bad_markers: list[int] = field(default_factory=list)  # skip markers without a reason


# ---------------------------------------------------------------------------------------------
# Markdown


def github_anchor(text: str) -> str:
    text = re.sub(r"<[^>]+>", "", text)
    text = text.replace("`", "")
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link keeps its text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def parse_markdown(path: str, text: str) -> Doc:
    doc = Doc(path=path, lines=text.split("\n"))
    headings: list[tuple[int, str]] = []
    seen_anchors: dict[str, int] = {}
    fence: tuple[str, int] | None = None  # (fence characters, indent)
    block: Block | None = None
    previous = ""
    skip_next = False
    for number, line in enumerate(doc.lines, start=1):
        if fence is not None:
            stripped = line.strip()
            if (stripped.startswith(fence[0][0] * len(fence[0]))
                    and set(stripped) <= {fence[0][0]} and len(line) - len(line.lstrip()) <= 3):
                fence = None
                doc.blocks.append(block)
                block = None
            else:
                block.lines.append(line)
            continue
        opened = FENCE_OPEN.match(line)
        if opened and not (opened.group(2)[0] == "`" and "`" in line[opened.end(2):]):
            fence = (opened.group(2), len(opened.group(1)))
            language = opened.group(3).lower()
            block = Block(language=language, line=number + 1, lines=[],
                          doc_test_skipped=bool(DOC_TEST_SKIP.match(previous)))
            if skip_next:
                block.language = "#skipped"
            skip_next = False
            previous = line
            continue
        marker = SKIP_MARKER.match(line)
        if marker:
            if not marker.group(1).strip():
                doc.bad_markers.append(number)
            skip_next = True
            previous = line
            continue
        if skip_next and line.strip():
            doc.skipped_lines.add(number)
            skip_next = False
        heading = HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            while headings and headings[-1][0] >= level:
                headings.pop()
            headings.append((level, heading.group(2)))
            anchor = github_anchor(heading.group(2))
            count = seen_anchors.get(anchor, 0)
            doc.anchors.add(anchor if count == 0 else f"{anchor}-{count}")
            seen_anchors[anchor] = count + 1
        doc.prose.append((number, line, list(headings)))
        previous = line
    if block is not None:  # an unclosed fence runs to the end, as GitHub renders it
        doc.blocks.append(block)
    return doc


def code_spans(line: str) -> list[tuple[int, str]]:
    """The inline code spans of a line: (start column, content)."""
    spans = []
    i = 0
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        if line[i] != "`":
            i += 1
            continue
        j = i
        while j < len(line) and line[j] == "`":
            j += 1
        ticks = line[i:j]
        end = line.find(ticks, j)
        while end != -1 and end + len(ticks) < len(line) and line[end + len(ticks)] == "`":
            end = line.find(ticks, end + len(ticks) + 1)
        if end == -1:
            i = j
            continue
        content = line[j:end]
        if content.startswith(" ") and content.endswith(" ") and content.strip():
            content = content[1:-1]
        spans.append((i, content))
        i = end + len(ticks)
    return spans


def strip_code_spans(line: str) -> str:
    out, last = [], 0
    for start, content in code_spans(line):
        out.append(line[last:start])
        out.append(" " * (len(content) + 2))
        last = start + len(content) + 2
        while last < len(line) and line[last] == "`":
            last += 1
    out.append(line[last:])
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Rule "path"


class Repo:
    def __init__(self, root: str):
        self.root = root
        self.top = {name for name in os.listdir(root)
                    if not name.startswith(".") and name != "build"}
        self.top_dirs = {name for name in self.top if os.path.isdir(os.path.join(root, name))}

    def exists(self, relative: str, base: str = "") -> bool:
        pattern = os.path.join(self.root, base, relative)
        for alternative in expand_braces(pattern):
            alternative = re.sub(r"<[^<>/]*>", "*", alternative)
            must_be_dir = alternative.endswith("/")
            if any(ch in alternative for ch in "*?["):
                matches = glob.glob(alternative.rstrip("/") or "/")
                if must_be_dir:
                    matches = [m for m in matches if os.path.isdir(m)]
                if not matches:
                    return False
            elif not (os.path.isdir(alternative) if must_be_dir else os.path.exists(alternative)):
                return False
        return True


def expand_braces(text: str) -> list[str]:
    match = re.search(r"\{([^{}]*,[^{}]*)\}", text)
    if not match:
        return [text]
    out = []
    for choice in match.group(1).split(","):
        out.extend(expand_braces(text[:match.start()] + choice + text[match.end():]))
    return out


PATH_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+*{},<>…")


def path_candidates(text: str, names: set[str]) -> list[str]:
    """Words of `text` whose first component is one of `names` followed by '/'."""
    found = []
    for match in re.finditer(r"(?<![\w./$~@:%+-])(" + "|".join(re.escape(n) for n in
                                                              sorted(names, key=len, reverse=True))
                             + r")/", text):
        start = match.start()
        i = match.end()
        depth = 0
        in_placeholder = False
        while i < len(text):
            ch = text[i]
            if ch == "<":
                in_placeholder = True
            elif ch == ">":
                if not in_placeholder:
                    break
                in_placeholder = False
            elif in_placeholder:
                if ch in "\n`|":
                    break
                i += 1
                continue
            elif ch == "{":
                depth += 1
            elif ch == "}":
                if depth == 0:
                    break
                depth -= 1
            elif ch == "," and depth == 0:
                break
            elif ch not in PATH_CHARS:
                break
            i += 1
        word = text[start:i]
        # Ellipses end the checked part.
        for ellipsis in ("...", "…"):
            if ellipsis in word:
                word = word[:word.index(ellipsis)]
                word = word[:word.rfind("/") + 1] if "/" in word else word
        word = word.rstrip(".,:;")
        if word.count("{") != word.count("}") or word.count("<") != word.count(">"):
            continue
        found.append(word)
    return found


def check_paths(doc: Doc, repo: Repo, problems: list[Problem]) -> None:
    doc_dir = os.path.dirname(doc.path)
    local = set()
    if doc_dir:
        local = {name for name in os.listdir(os.path.join(repo.root, doc_dir))
                 if os.path.isdir(os.path.join(repo.root, doc_dir, name))
                 and not name.startswith(".")} - repo.top

    def check_text(number: int, text: str) -> None:
        if number in doc.skipped_lines:
            return
        text = HTML_COMMENT.sub("", text)
        text = LINK.sub(lambda m: m.group(0).replace(m.group(1), ""), text)
        text = IMAGE_LINK.sub(lambda m: m.group(0).replace(m.group(1), ""), text)
        for word in path_candidates(text, repo.top):
            checked("path", doc, number, word)
            if not repo.exists(word):
                problems.append(Problem(doc.path, number, "path", word,
                                        "no such file or directory in the repository"))
        if local:
            for word in path_candidates(text, local):
                checked("path", doc, number, f"{doc_dir}/{word}")
                if not repo.exists(word, doc_dir):
                    problems.append(Problem(doc.path, number, "path", word,
                                            f"no such file or directory in {doc_dir}/"))

    for number, line, _ in doc.prose:
        check_text(number, line)
    for block in doc.blocks:
        if block.language == "#skipped":
            continue
        for offset, line in enumerate(block.lines):
            check_text(block.line + offset, line)


def check_links(doc: Doc, docs_by_path: dict[str, Doc], repo: Repo,
                problems: list[Problem]) -> None:
    for number, line, _ in doc.prose:
        if number in doc.skipped_lines:
            continue
        for pattern in (LINK, IMAGE_LINK):
            for match in pattern.finditer(strip_code_spans(line)):
                target = match.group(1)
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                    continue  # https:, mailto:, ...
                path, _, anchor = target.partition("#")
                checked("link", doc, number, target)
                if path:
                    relative = (path.lstrip("/") if path.startswith("/")
                                else os.path.normpath(os.path.join(os.path.dirname(doc.path),
                                                                   path)))
                    if relative.startswith("..") or not os.path.exists(
                            os.path.join(repo.root, relative)):
                        problems.append(Problem(doc.path, number, "link", target,
                                                "the link's target does not exist"))
                        continue
                    target_doc = docs_by_path.get(relative)
                    if target_doc is None and relative.endswith(".md"):
                        target_doc = load_doc(repo.root, relative)
                        docs_by_path[relative] = target_doc
                else:
                    target_doc = doc
                if anchor and target_doc is not None and anchor.lower() not in target_doc.anchors:
                    problems.append(Problem(doc.path, number, "link", target,
                                            "no heading has this anchor"))


# ---------------------------------------------------------------------------------------------
# Shell commands


@dataclass
class Command:
    program: str | None
    words: list[str]  # the words after the command word
    # The line of each word when they span several (a synopsis); None: the command's line.
    lines: list[int] | None = None


def shell_words(text: str) -> list[str]:
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        return list(lexer)
    except ValueError:  # an unbalanced quote: fall back to whitespace
        return text.split()


def program_of(word: str, variables: dict[str, str]) -> str | None:
    match = re.fullmatch(r"\$\{?(\w+)\}?", word)
    if match:
        return variables.get(match.group(1))
    base = word.rstrip("/").rsplit("/", 1)[-1]
    return base if base in PROGRAMS else None


def split_commands(words: list[str], variables: dict[str, str],
                   created: set[str]) -> list[Command]:
    """Simple commands of a word list; binds variables assigned a kdp program."""
    commands: list[Command] = []
    current: list[str] = []

    def finish() -> None:
        if not current:
            return
        i = 0
        while i < len(current):
            word = current[i]
            assignment = re.fullmatch(r"(\w+)=(.*)", word, re.S)
            if assignment:
                value_words = shell_words(assignment.group(2))
                if value_words and program_of(value_words[0], variables):
                    variables[assignment.group(1)] = program_of(value_words[0], variables)
                    commands.append(Command(program_of(value_words[0], variables),
                                            value_words[1:]))
                else:
                    variables.pop(assignment.group(1), None)
                i += 1
            elif word in TRANSPARENT_WORDS:
                i += 1
            elif word == "timeout" and i + 1 < len(current):
                i += 2
                while i < len(current) and current[i].startswith("-"):
                    i += 1
            elif word == "taskset":
                i += 1
                while i < len(current) and current[i].startswith("-"):
                    i += 1
                i += 1
            else:
                break
        if i < len(current):
            commands.append(Command(program_of(current[i], variables), current[i + 1:]))
        current.clear()

    redirect = False
    for word in words:
        if redirect:
            created.add(word)
            redirect = False
            continue
        if word and set(word) <= set("();|&<>"):
            if ">" in word:
                redirect = True
                if current and current[-1].isdigit():
                    current.pop()  # 2>/dev/null: the 2 is no argument
                continue
            if word in ("<", "<<", "<<<"):
                redirect = True  # the input file or heredoc word: not an argument
                continue
            finish()
            continue
        current.append(word)
    finish()
    return commands


def shell_lines(block: Block) -> list[tuple[int, str]]:
    """Logical command lines of a shell block: (first line number, text), heredocs dropped."""
    out = []
    pending, pending_line = "", 0
    heredoc: tuple[str, bool] | None = None
    for offset, raw in enumerate(block.lines):
        number = block.line + offset
        if heredoc is not None:
            if (raw.lstrip("\t") if heredoc[1] else raw) == heredoc[0]:
                heredoc = None
            continue
        line = raw
        if block.language == "console":
            if pending:
                pass
            elif line.startswith("$ "):
                line = line[2:]
            else:
                continue
        if not pending:
            pending_line = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        pending += line
        here = re.search(r"<<(-?)\s*(['\"]?)(\w+)\2", pending)
        if here:
            heredoc = (here.group(3), here.group(1) == "-")
        out.append((pending_line, pending))
        pending = ""
    if pending:
        out.append((pending_line, pending))
    return out


# ---------------------------------------------------------------------------------------------
# Rule "flag"


class HelpCache:
    def __init__(self, paths: dict[str, str]):
        self.paths = paths
        self.cache: dict[tuple[str, ...], set[str] | None] = {}
        self.subcommands: dict[tuple[str, ...], set[str]] = {}
        self.failures: list[str] = []

    def available(self, program: str) -> bool:
        return program in self.paths

    def _run(self, argv: list[str]) -> str | None:
        for attempt in range(3):  # a binary being relinked is briefly missing or busy
            try:
                result = subprocess.run(argv + ["--help"], capture_output=True, text=True,
                                        timeout=60, env=dict(os.environ, ASAN_OPTIONS=
                                                             "detect_leaks=0"))
                return result.stdout + result.stderr
            except (OSError, subprocess.TimeoutExpired) as error:
                last = error
                time.sleep(1 + attempt)
        self.failures.append(f"cannot run {' '.join(argv)} --help: {last}")
        return None

    def flags(self, program: str, path: tuple[str, ...] = ()) -> set[str] | None:
        key = (program,) + path
        if key not in self.cache:
            text = self._run([self.paths[program], *path])
            if text is None:
                self.cache[key] = None
                self.subcommands[key] = set()
            else:
                self.cache[key] = parse_help_flags(text)
                self.subcommands[key] = parse_help_subcommands(text)
        return self.cache[key]

    def subs(self, program: str, path: tuple[str, ...]) -> set[str]:
        self.flags(program, path)
        return self.subcommands[(program,) + path]

    def tree_flags(self, program: str, path: tuple[str, ...] = ()) -> set[str]:
        """The flags of `program` and every subcommand below `path`."""
        flags = set(self.flags(program, path) or ())
        if len(path) < 3:
            for sub in self.subs(program, path):
                flags |= self.tree_flags(program, path + (sub,))
        return flags

    def any_program_flags(self) -> set[str]:
        flags: set[str] = set()
        for program in self.paths:
            flags |= self.tree_flags(program)
        return flags


def parse_help_flags(text: str) -> set[str]:
    """The long options a help text lists: words `--name` on lines that start with an option."""
    flags = set()
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("-"):
            continue
        for match in re.finditer(r"(?:^|[\s,\[|])--([A-Za-z][A-Za-z0-9_-]*)", stripped):
            flags.add(match.group(1))
    return flags


def parse_help_subcommands(text: str) -> set[str]:
    """Subcommand names of a CLI11-style `Subcommands:` section (`pods, pod` both count)."""
    subs = set()
    in_section = False
    for line in text.splitlines():
        if re.match(r"^\S.*:\s*$", line):
            in_section = line.strip().lower().startswith("subcommands")
            continue
        if in_section:
            match = re.match(r"^ {1,4}([a-z][\w-]*(?:, [a-z][\w-]*)*)(?:\s{2,}|$)", line)
            if match:
                subs.update(name.strip() for name in match.group(1).split(","))
    return subs


def check_command(doc: Doc, number: int, command: Command, helps: HelpCache,
                  problems: list[Problem], whole_tree: bool = False) -> None:
    """`whole_tree`: the flag may be any subcommand's (a flag table's first cell)."""
    program = command.program
    if program is None or not helps.available(program):
        return
    path: tuple[str, ...] = ()
    allowed = set(helps.tree_flags(program) if whole_tree else helps.flags(program) or ())
    for index, word in enumerate(command.words):
        if command.lines is not None:
            number = command.lines[index]
        if word == "--":
            break
        word = word.lstrip("[(").rstrip("]),")  # synopsis brackets: [--flag VALUE]
        flag = FLAG.match(word)
        if flag:
            name = flag.group(1)
            if helps.flags(program) is None:
                return
            checked("flag", doc, number, f"{' '.join((program,) + path)} --{name}")
            if name not in allowed:
                where = " ".join((program,) + path)
                what = (f"neither `{program} --help` nor a subcommand's lists --{name}"
                        if whole_tree else f"`{where} --help` lists no --{name}")
                problems.append(Problem(doc.path, number, "flag", word, what))
            continue
        if word in helps.subs(program, path):
            path = path + (word,)
            allowed |= helps.flags(program, path) or set()


def synopsis_lines(block: Block) -> list[tuple[list[int], list[str]]]:
    """Usage synopses of a block without a language: a line whose first word is a kdp program's
    bare name (`kdp-manager [--kubelet-root DIR] ...`), with the following lines indented under
    it that start with `[` or `-`. Brackets and `|` alternatives are dropped. Returns each
    synopsis's words and the line of each word."""
    out: list[tuple[list[int], list[str]]] = []
    continues = False
    for offset, line in enumerate(block.lines):
        words = re.findall(r"[^\s\[\]|]+", line)
        number = block.line + offset
        if words and words[0] in PROGRAMS and not line.startswith((" ", "\t")):
            out.append(([number] * len(words), words))
            continues = True
        elif continues and re.match(r"^\s+[\[-]", line):
            out[-1][0].extend([number] * len(words))
            out[-1][1].extend(words)
        else:
            continues = False
    return out


def flag_spans_program(headings: list[tuple[int, str]]) -> str | None:
    for _, text in reversed(headings):
        named = {p for p in PROGRAMS if re.search(r"(?<![\w-])" + re.escape(p) + r"(?![\w-])",
                                                  text)}
        if len(named) == 1:
            return named.pop()
        if len(named) > 1:
            return None
    return None


def owner_before(text: str) -> str | None:
    """Who the text right before a flag span says the flag belongs to: a kdp program named
    (`kdp-manager`'s, kdp-manager), "foreign" (another tool, or a possessive of a name that is
    not a kdp program: the kubelet's), or None (nothing said)."""
    text = text.replace("`", "").rstrip(" (/:,").rstrip()
    possessive = re.search(r"([\w./-]+)[’']s$", text)
    if possessive:
        return possessive.group(1) if possessive.group(1) in PROGRAMS else "foreign"
    last = re.search(r"([\w./-]+)$", text)
    if last and last.group(1) in PROGRAMS:
        return last.group(1)
    return "foreign" if last and last.group(1).lower() in FOREIGN_TOOLS else None


def check_flags(doc: Doc, helps: HelpCache, repo: Repo, problems: list[Problem]) -> None:
    """The rules "flag" and, on the same commands, "input"."""
    variables: dict[str, str] = {}
    created: set[str] = set()
    # Commands of shell blocks and the "input" rule.
    items: list[tuple[int, object]] = [(b.line, b) for b in doc.blocks]
    items += [(number, (line, headings)) for number, line, headings in doc.prose]
    items.sort(key=lambda item: item[0])
    for number, item in items:
        if isinstance(item, Block):
            if item.language in ("", "text", "txt"):
                for line_numbers, words in synopsis_lines(item):
                    command = Command(words[0], words[1:], line_numbers[1:])
                    check_command(doc, line_numbers[0], command, helps, problems)
            if item.language not in SHELL_LANGUAGES:
                continue
            for line_number, text in shell_lines(item):
                for command in split_commands(shell_words(text), variables, created):
                    check_command(doc, line_number, command, helps, problems)
                    if not item.doc_test_skipped:
                        check_input(doc, line_number, command, created, repo, problems)
            continue
        line, headings = item
        if number in doc.skipped_lines:
            continue
        section_program = flag_spans_program(headings)
        first_cell = line.lstrip().startswith("|")
        cell_start = line.find("|") + 1 if first_cell else -1
        for start, content in code_spans(line):
            words = shell_words(content)
            if not words:
                continue
            if len(words) > 1 and re.fullmatch(r"-\w,?", words[0]) and FLAG.match(words[1]):
                words = words[1:]  # `-o, --output FORMAT`
            if FLAG.match(words[0]):
                # A lone flag in prose, or the first cell of a flag table.
                is_first_cell = first_cell and not line[cell_start:start].strip()
                if len(words) > 2 and not is_first_cell:
                    continue
                owner = None if is_first_cell else owner_before(line[:start])
                if owner == "foreign":
                    continue
                if owner is not None:
                    if helps.available(owner):
                        check_command(doc, number, Command(owner, words[:1]), helps, problems,
                                      whole_tree=True)
                    continue
                if section_program is None or not helps.available(section_program):
                    continue
                if is_first_cell:
                    check_command(doc, number, Command(section_program, words[:1]), helps,
                                  problems, whole_tree=True)
                else:
                    name = FLAG.match(words[0]).group(1)
                    checked("flag", doc, number, f"(any kdp program) --{name}")
                    if name not in helps.any_program_flags():
                        problems.append(Problem(
                            doc.path, number, "flag", words[0],
                            f"no kdp program's --help lists --{name} (quoted in a section "
                            f"about {section_program})"))
                continue
            for command in split_commands(words, dict(variables), set()):
                check_command(doc, number, command, helps, problems)


# ---------------------------------------------------------------------------------------------
# Rule "input"


def check_input(doc: Doc, number: int, command: Command, created: set[str], repo: Repo,
                problems: list[Problem]) -> None:
    words = command.words
    for i, word in enumerate(words):
        value = None
        if word in ("-f", "--filename") and i + 1 < len(words):
            value = words[i + 1]
        elif word.startswith("--filename="):
            value = word.split("=", 1)[1]
        if value is None or value == "-" or "$" in value or any(c in value for c in "*?[<"):
            continue
        if value in created or value.startswith("/"):
            continue
        checked("input", doc, number, value)
        if not os.path.exists(os.path.join(repo.root, value)):
            problems.append(Problem(doc.path, number, "input", value,
                                    "the block runs from the repository root, where no such "
                                    "file exists (and no earlier block wrote it)"))


# ---------------------------------------------------------------------------------------------
# Rule "version"


CMAKE_QUOTE = re.compile(
    r"\bcmake\s*(?:\(\s*)?(?:≥|>=|version|at least|v)?\s*(\d+\.\d+)(?:\.\d+)?\b(?!\.\d)",
    re.IGNORECASE)
CMAKE_MINIMUM_CALL = re.compile(r"cmake_minimum_required\s*\(\s*VERSION\s+(\d+\.\d+)",
                                re.IGNORECASE)
KDP_VERSION_QUOTES = (
    re.compile(r"find_package\s*\(\s*kdp\s+(\d+(?:\.\d+){0,2})\b"),
    re.compile(r"\bkdp(?:-[a-z][a-z-]*)?[:_](\d+\.\d+\.\d+)\b"),
    re.compile(r"(?<![\w-])kdp\s+(?:version\s+)?v?(\d+\.\d+(?:\.\d+)?)\b", re.IGNORECASE),
)


def project_versions(root: str) -> tuple[str | None, str | None]:
    try:
        with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as file:
            text = file.read()
    except OSError:
        return None, None
    minimum = CMAKE_MINIMUM_CALL.search(text)
    project = re.search(r"project\s*\(\s*kdp\b[^)]*?\bVERSION\s+(\d+(?:\.\d+)*)", text, re.S)
    cmake = None
    if minimum:
        cmake = ".".join(minimum.group(1).split(".")[:2])
    return cmake, project.group(1) if project else None


def check_versions(doc: Doc, cmake_minimum: str | None, kdp_version: str | None,
                   problems: list[Problem]) -> None:
    lines = [(number, line) for number, line, _ in doc.prose]
    for block in doc.blocks:
        if block.language != "#skipped":
            lines += [(block.line + i, line) for i, line in enumerate(block.lines)]
    for number, line in lines:
        if number in doc.skipped_lines:
            continue
        if cmake_minimum:
            for match in list(CMAKE_QUOTE.finditer(line)) + list(CMAKE_MINIMUM_CALL.finditer(line)):
                quoted = ".".join(match.group(1).split(".")[:2])
                checked("version", doc, number, match.group(0).strip())
                if quoted != cmake_minimum:
                    problems.append(Problem(
                        doc.path, number, "version", match.group(0).strip(),
                        f"the build needs CMake {cmake_minimum} (cmake_minimum_required in "
                        "CMakeLists.txt)"))
        if kdp_version:
            parts = kdp_version.split(".")
            for pattern in KDP_VERSION_QUOTES:
                for match in pattern.finditer(line):
                    quoted = match.group(1).split(".")
                    checked("version", doc, number, match.group(0).strip())
                    if quoted != parts[:len(quoted)]:
                        problems.append(Problem(
                            doc.path, number, "version", match.group(0).strip(),
                            f"kdp's version is {kdp_version} (project() in CMakeLists.txt)"))


# ---------------------------------------------------------------------------------------------


def load_doc(root: str, relative: str) -> Doc:
    with open(os.path.join(root, relative), encoding="utf-8") as file:
        return parse_markdown(relative, file.read())


def default_docs(root: str) -> list[str]:
    docs = ["README.md"] if os.path.exists(os.path.join(root, "README.md")) else []
    docs += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))
    docs += sorted(os.path.relpath(p, root)
                   for p in glob.glob(os.path.join(root, "examples", "*", "README.md")))
    return docs


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description="Check that the paths, flags and versions the docs quote are true.")
    parser.add_argument("--root", required=True, help="the repository (source directory)")
    parser.add_argument("--program", action="append", default=[], metavar="NAME=PATH",
                        help="a built kdp program for the flag rule (repeatable)")
    parser.add_argument("--build-dir", help="find every program not given with --program here")
    parser.add_argument("--verbose", action="store_true",
                        help="also print every quote checked and the rule it was checked by")
    parser.add_argument("docs", nargs="*", help="documents relative to --root (default: "
                        "README.md, docs/*.md, examples/*/README.md)")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    VERBOSE[0] = args.verbose
    if not os.path.isdir(root):
        print(f"check_docs: no directory {args.root}", file=sys.stderr)
        return 2
    paths: dict[str, str] = {}
    for item in args.program:
        name, sep, path = item.partition("=")
        if not sep or name not in PROGRAMS:
            print(f"check_docs: --program wants NAME=PATH with NAME one of {', '.join(PROGRAMS)}",
                  file=sys.stderr)
            return 2
        paths[name] = path
    if args.build_dir:
        for name, relative in PROGRAM_PATHS.items():
            paths.setdefault(name, os.path.join(args.build_dir, relative))
    for name, path in paths.items():
        if not os.access(path, os.X_OK):
            print(f"check_docs: {name}: {path} is not an executable", file=sys.stderr)
            return 2
    if not paths:
        print("check_docs: no programs given (--program, --build-dir): the flag rule is not "
              "checked", file=sys.stderr)

    repo = Repo(root)
    helps = HelpCache(paths)
    cmake_minimum, kdp_version = project_versions(root)
    problems: list[Problem] = []
    docs_by_path: dict[str, Doc] = {}
    doc_paths = args.docs or default_docs(root)
    for relative in doc_paths:
        try:
            docs_by_path[relative] = load_doc(root, relative)
        except OSError as error:
            print(f"check_docs: cannot read {relative}: {error.strerror}", file=sys.stderr)
            return 2
    for relative in doc_paths:
        doc = docs_by_path[relative]
        check_paths(doc, repo, problems)
        check_links(doc, docs_by_path, repo, problems)
        check_flags(doc, helps, repo, problems)
        check_versions(doc, cmake_minimum, kdp_version, problems)
        for number in doc.bad_markers:
            problems.append(Problem(doc.path, number, "marker", doc.lines[number - 1].strip(),
                                    "a docs-check skip marker must say why: skip (REASON)"))
    if helps.failures:
        for failure in helps.failures:
            print(f"check_docs: {failure}", file=sys.stderr)
        return 2
    seen = set()
    order = {path: i for i, path in enumerate(doc_paths)}
    problems.sort(key=lambda p: (order.get(p.doc, len(order)), p.doc, p.line))
    for problem in problems:
        text = str(problem)
        if text not in seen:
            seen.add(text)
            print(text)
    counts = ", ".join(f"{n} {rule}" for rule, n in CHECKED.items())
    if problems:
        print(f"check_docs: {len(seen)} problem(s) in {len({p.doc for p in problems})} "
              f"of {len(doc_paths)} documents (checked: {counts}); the rules are at the top of "
              f"{os.path.relpath(os.path.abspath(__file__), root)}")
        return 1
    print(f"check_docs: {len(doc_paths)} documents, every quoted path, link, input, flag and "
          f"version holds (checked: {counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
