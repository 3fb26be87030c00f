"""The documentation: README.md and the MkDocs site in docs/ (mkdocs.yml).

The site is built here, by pytest, rather than by a line of its own in the Makefile: `make test`
runs pytest, so CI builds it either way, and as a test the build shows up by name, runs under a
bare `pytest` too, and is checked to fail on a broken link (mkdocs' `--quiet` silently turns
`--strict` off, which a Makefile line would not notice).

Every command the docs show is checked against the program it names: each `--flag` of a
`python -m MODULE [SUBCOMMAND]` (or `python SCRIPT.py`, or `torchrun ... -m MODULE`) command must be
one that the command's `--help` lists, and each `make TARGET` must be a Makefile rule.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
README = PROJECT_ROOT / "README.md"
DOCS = PROJECT_ROOT / "docs"
# Top-level packages of this project: commands of other modules (torch.distributed.run) are not ours to check.
PACKAGES = {"indexer", "search", "training", "data", "bench"}
README_MAX_BYTES = 6000  # "a README that fits on two screens" (issue 30)

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
INLINE_CODE = re.compile(r"`([^`\n]+)`")
FLAG = re.compile(r"^(--[A-Za-z][\w-]*|-[A-Za-z])$")


def doc_pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def mkdocs_env() -> dict[str, str]:
    return {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def mkdocs_build(config: Path, site_dir: Path) -> subprocess.CompletedProcess[str]:
    # Never with --quiet: mkdocs 1.6 then counts no warnings, and --strict passes a broken link.
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site_dir)], capture_output=True, text=True, env=mkdocs_env(),
                          timeout=120)


def test_the_site_builds_strict(tmp_path):
    result = mkdocs_build(PROJECT_ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    built = {p.name for p in (tmp_path / "site").glob("*.html")}
    assert {f"{p.stem}.html" for p in DOCS.glob("*.md")} <= built
    # Offline: Material's default Google Fonts are off (theme.font: false).
    assert "fonts.googleapis.com" not in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")


def test_a_broken_link_fails_the_strict_build(tmp_path):
    shutil.copy(PROJECT_ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs")
    with (tmp_path / "docs" / "index.md").open("a", encoding="utf-8") as page:
        page.write("\nSee [modes](ranking.md#no-such-heading).\n")
    result = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0 and "no-such-heading" in result.stdout + result.stderr


def test_the_readme_fits_on_two_screens_and_its_links_resolve():
    text = README.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= README_MAX_BYTES, "the README grew: move the detail into docs/"
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert "docs/assets/search.png" in targets  # the screenshot of the app
    for target in targets:
        if not re.match(r"[a-z]+:", target) and not target.startswith("#"):
            assert (PROJECT_ROOT / target.split("#")[0]).exists(), target


# --- commands ---------------------------------------------------------------------------------


def shell_lines(code: str) -> list[str]:
    """The logical lines of a bash block: continuations joined."""
    return [line.strip() for line in code.replace("\\\n", " ").splitlines() if line.strip()]


def doc_commands() -> list[tuple[str, str]]:
    """(page, command) for every line of a ```bash block and every inline code span that runs
    python, torchrun or make."""
    found = []
    for page in doc_pages():
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(PROJECT_ROOT).as_posix()
        for lang, code in FENCE.findall(text):
            if lang in ("bash", "sh", "shell", "console"):
                found += [(name, line) for line in shell_lines(code) if not line.startswith("#")]
        prose = FENCE.sub("", text).replace("\n", " ")
        found += [(name, span) for span in INLINE_CODE.findall(prose)
                  if re.match(r"(\S+=\S+ )*(\S*/)?(python3?|torchrun|make) ", span)]
    return found


@dataclass
class Invocation:
    kind: str  # "module", "script" or "make"
    target: str  # the module, the script's path, or the make target
    args: list[str] = field(default_factory=list)


def parse(command: str) -> Invocation | None:
    """What a documented command runs, or None when it runs nothing of ours (curl, ray, ...)."""
    tokens = shlex.split(command, comments=True)
    while tokens and re.match(r"^[A-Z_][A-Z0-9_]*=", tokens[0]):
        tokens = tokens[1:]  # HOST=0.0.0.0 PORT=9000 make run
    if not tokens:
        return None
    program = tokens[0].rsplit("/", 1)[-1]
    if program == "make":
        return Invocation("make", tokens[1] if len(tokens) > 1 else "", [])
    if program not in ("python", "python3", "torchrun"):
        return None
    rest = tokens[1:]
    for i, token in enumerate(rest):
        if token == "-m" and i + 1 < len(rest):
            module = rest[i + 1]
            if module.split(".")[0] not in PACKAGES:
                return None
            return Invocation("module", module, [arg for arg in rest[i + 2:] if arg != "..."])
        if token.endswith(".py") and program != "torchrun":
            return Invocation("script", token, [arg for arg in rest[i + 1:] if arg != "..."])
    return None  # python -X importtime, torchrun's own options


def runner(invocation: Invocation) -> list[str]:
    if invocation.kind == "module":
        return [sys.executable, "-m", invocation.target]
    return [sys.executable, invocation.target]


HELP_RUNNER = PROJECT_ROOT / "tests" / "help_runner.py"
_prefetched: dict[tuple[str, ...], str] = {}


def run_helps(programs: list[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """Each program's `--help` output, all read in one fresh interpreter (tests/help_runner.py):
    each fails the test if its --help does not exit 0."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    result = subprocess.run([sys.executable, str(HELP_RUNNER), *(json.dumps(list(p[1:])) for p in programs)],
                            capture_output=True, text=True, cwd=PROJECT_ROOT, env=env, timeout=300)
    assert result.returncode == 0, f"tests/help_runner.py failed:\n{result.stdout}{result.stderr}"
    found = {}
    for program in programs:
        status, out, err = json.loads(result.stdout)[json.dumps(list(program[1:]))]
        assert status == 0, f"{' '.join(program[1:])} --help failed:\n{out}{err}"
        found[program] = out
    return found


@cache
def help_text(program: tuple[str, ...]) -> str:
    if program in _prefetched:
        return _prefetched[program]
    return run_helps([program])[program]


def subcommands(help_output: str) -> list[str]:
    """argparse's subcommands: a line of the positional arguments that is only {a,b,c} (an
    option's choices follow its flag)."""
    choices = re.search(r"^ +\{([\w,-]+)\}$", help_output, re.M)
    return choices.group(1).split(",") if choices else []


def program_of(invocation: Invocation) -> tuple[tuple[str, ...], list[str], list[str]]:
    """(the program whose --help lists the flags, the documented args, problems), with a
    subcommand taken off the args when the top-level help names one."""
    program = tuple(runner(invocation))
    args = list(invocation.args)
    subs = subcommands(help_text(program))
    if subs and args and not args[0].startswith("-"):
        if args[0] not in subs:
            return program, args, [f"{args[0]!r} is not a subcommand of {invocation.target} ({', '.join(subs)})"]
        program, args = (*program, args[0]), args[1:]
    return program, args, []


def flags(args: list[str]) -> list[str]:
    names = (arg.strip("[]").split("=", 1)[0] for arg in args)
    return [name for name in names if FLAG.match(name)]


def problems(command: str) -> list[str]:
    invocation = parse(command)
    if invocation is None:
        return []
    if invocation.kind == "make":
        rules = re.findall(r"^([\w.-]+):", (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
        return [] if invocation.target in rules else [f"no Makefile rule {invocation.target!r}"]
    if invocation.kind == "script":
        if not (PROJECT_ROOT / invocation.target).is_file():
            return [f"no script {invocation.target}"]
        if not flags(invocation.args):
            return []  # a benchmark is never run just to read its --help
    program, args, found = program_of(invocation)
    if found:
        return found
    text = help_text(program)
    return [f"{flag} is not an option of {' '.join(program[1:])}" for flag in flags(args)
            if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text)]


def needs_help(invocation: Invocation) -> bool:
    if invocation.kind == "script":
        return (PROJECT_ROOT / invocation.target).is_file() and bool(flags(invocation.args))
    return invocation.kind == "module"


def prefetch_help(commands: list[str]) -> None:
    """The --help of every documented program, in one interpreter: the top-level programs
    first, then the subcommands their help names."""
    invocations = [inv for inv in map(parse, commands) if inv is not None and needs_help(inv)]
    _prefetched.update(run_helps(sorted({tuple(runner(inv)) for inv in invocations})))
    _prefetched.update(run_helps(sorted({program_of(inv)[0] for inv in invocations} - _prefetched.keys())))


def test_every_documented_command_uses_flags_its_help_lists():
    commands = doc_commands()
    parsed = [parse(command) for _, command in commands]
    modules = {inv.target for inv in parsed if inv is not None and inv.kind == "module"}
    # The parser finds the commands it should: a docs rewrite that hides them fails here, not silently.
    assert {"indexer", "search", "search.api", "search.eval", "training", "training.eval_sts"} <= modules
    assert any(inv is not None and inv.kind == "make" and inv.target == "test" for inv in parsed)
    prefetch_help([command for _, command in commands])
    failures = [f"{page}: {command}\n    {problem}" for page, command in commands for problem in problems(command)]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(("command", "expected"), [
    (".venv/bin/python -m search 'q' --index x --no-such-flag", "--no-such-flag is not an option of -m search"),
    ("python -m indexer build --source S --index D [--no-such-flag]", "--no-such-flag is not an option"),
    ("python -m indexer rebuild --index D", "'rebuild' is not a subcommand of indexer"),
    ("torchrun --nproc_per_node 4 -m training siamese --base b --no-such-flag", "--no-such-flag is not an option"),
    ("HOST=0.0.0.0 make no-such-target", "no Makefile rule 'no-such-target'"),
    ("python bench/no_such_bench.py", "no script bench/no_such_bench.py"),
])
def test_a_wrong_command_is_caught(command, expected):
    assert any(expected in problem for problem in problems(command)), problems(command)


@pytest.mark.parametrize("command", [
    ".venv/bin/python -m indexer build --source PATH --index DIR [--model PATH] [--rebuild] [--strict]",
    "python -m search.eval --filter JSON",
    ".venv/bin/python -m search 'q' --index indexes/demo --rerank --no-rerank -k 5",
    "curl -X POST http://127.0.0.1:8000/search -d '{}'",
    "python -m torch.distributed.run --nproc_per_node 2",
])
def test_a_right_command_passes(command):
    assert problems(command) == []
