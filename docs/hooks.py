"""MkDocs hook: the command-line reference, generated from the argparse parsers at build time.

A page that holds the line ``<!-- svtjax-cli-reference -->`` gets, in its place, one section per
command (``svtjax``, each subcommand of :func:`svtjax.cli.build_parser`, ``svtjax audit`` from
``svtjax.cli.audit`` and ``svtjax bench`` from the checkout's ``benchmarks/harness.py``): the usage
line, the description and a table of every argument with its help text as ``--help`` prints it.
Nothing is typed by hand, so no flag can go missing (``tests/test_docs.py`` checks the built
page against the parsers).
"""

from __future__ import annotations

import argparse
import html
import sys
from pathlib import Path

MARKER = "<!-- svtjax-cli-reference -->"
ROOT = Path(__file__).resolve().parents[1]


def parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """Every parser of the ``svtjax`` command, as ``(command, parser)`` in the order of
    ``svtjax --help``: the top level, its subcommands, then ``audit`` and ``bench``, which parse
    their own arguments."""
    if str(ROOT) not in sys.path:  # benchmarks/ is a folder of the checkout, not installed
        sys.path.insert(0, str(ROOT))
    from benchmarks import harness
    from svtjax import cli
    from svtjax.cli import audit

    top = cli.build_parser()
    found = [("svtjax", top)]
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if name == "audit":
                    found.append(("svtjax audit", audit.build_parser()))
                elif name == "bench":
                    found.append(("svtjax bench", harness.parser()))
                else:
                    found.append((f"svtjax {name}", sub))
    return found


def _cell(text: str) -> str:
    return html.escape(" ".join(text.split()), quote=False).replace("|", "\\|")


def _flags(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    if action.nargs == 0:
        return ", ".join(f"`{flag}`" for flag in action.option_strings)
    metavar = action.metavar or (
        "{" + ",".join(map(str, action.choices)) + "}" if action.choices else action.dest.upper())
    return ", ".join(f"`{flag} {metavar}`" for flag in action.option_strings)


def render_parser(command: str, parser: argparse.ArgumentParser) -> str:
    """One command's section: usage, description and the table of its arguments."""
    formatter = parser._get_formatter()
    usage = parser.format_usage().replace("usage: ", "", 1).strip()
    lines = [f"## `{command}`", "", "```text", usage, "```", ""]
    if parser.description:
        lines += [_cell(parser.description), ""]
    lines += ["| argument | help |", "|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                lines.append(f"| `{choice.dest}` | {_cell(formatter._expand_help(choice))} |")
            continue
        if action.help == argparse.SUPPRESS:
            continue
        help_text = formatter._expand_help(action) if action.help else ""
        lines.append(f"| {_flags(action)} | {_cell(help_text)} |")
    return "\n".join(lines) + "\n"


def render() -> str:
    return "\n".join(render_parser(command, parser) for command, parser in parsers())


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - MkDocs' hook
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render())
